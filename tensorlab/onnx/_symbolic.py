"""op -> ONNX node mappings (written from the ONNX operator specification).

HOOK: ops heard through autograd_hooks.tracer, fn(g, op, inputs, out, info) -> output name(s).
LEAF: functions the export wraps, fn(g, arguments by parameter name, out) -> output name(s).
Opsets 13 and later are supported; where an opset changed an operator (Reduce* axes become an
input at 18, LayerNormalization from 17, Gelu from 20, Pad's wrap mode from 19), both forms exist.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from ._trace import INT64_MAX

MIN_OPSET = 13


def _onnx_type(g, dt):
    if dt.np.kind == "c" or dt.name == "bfloat16" and g.opset < 13:
        raise g.unsupported(f"dtype {dt.name}")
    if dt.name == "bfloat16":
        return g.onnx.TensorProto.BFLOAT16
    return g.onnx.helper.np_dtype_to_tensor_dtype(dt.np)


def _as(g, t, dt):
    """t's value name, cast to dtype dt where t has another dtype."""
    name = g.val(t)
    if t._dtype is not dt:
        name = g.node("Cast", [name], to=_onnx_type(g, dt))
    return name


def _operand(g, x, dt):
    """A tensor (cast to dt) or a Python number (a constant of dtype dt)."""
    if isinstance(x, Tensor):
        return _as(g, x, dt)
    return g.const(np.asarray(x, dtype=dt.np), "scalar")


def _norm_dim(d, n):
    return d + n if d < 0 else d


def _axes(g, name, axes, op_type, **attrs):
    """A node taking `axes` (Squeeze/Unsqueeze from 13; Reduce* from 18) as an input."""
    if op_type.startswith("Reduce") and g.opset < 18:
        return g.node(op_type, [name], axes=list(axes), **attrs)
    return g.node(op_type, [name, g.ints(axes, "axes")], **attrs)


# -- elementwise ---------------------------------------------------------------------------------------
_UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
          "abs": "Abs", "neg": "Neg", "erf": "Erf", "sin": "Sin", "cos": "Cos", "floor": "Floor", "ceil": "Ceil",
          "reciprocal": "Reciprocal", "sign": "Sign", "logical_not": "Not", "isnan": "IsNaN", "round": "Round",
          "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh",
          "bitwise_not": "Not"}
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max",
           "minimum": "Min", "fmod": "Mod"}
_COMPARE = {"eq": "Equal", "lt": "Less", "gt": "Greater", "le": "LessOrEqual", "ge": "GreaterOrEqual", "ne": "Equal"}
_LOGICAL = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}


def _unary(g, op, inputs, out, info):
    (x,) = [v for v in info["operands"] if v is not None][:1]
    a = _as(g, x, out._dtype) if op not in ("isnan", "logical_not") else g.val(x)
    if op == "logical_not" and x._dtype is not dtypes.bool_:
        a = g.node("Cast", [a], to=g.onnx.TensorProto.BOOL)
    if op == "bitwise_not" and out._dtype is not dtypes.bool_:
        raise g.unsupported("bitwise_not", "integer operands (ONNX BitwiseNot: bool only here)")
    return g.node(_UNARY[op], [a], hint=op)


def _expm1_log1p(g, op, inputs, out, info):
    dt = out._dtype
    x = _as(g, info["operands"][0], dt)
    one = g.const(np.asarray(1, dt.np))
    if op == "expm1":
        return g.node("Sub", [g.node("Exp", [x]), one], hint=op)
    return g.node("Log", [g.node("Add", [x, one])], hint=op)


def _rsqrt(g, op, inputs, out, info):
    x = info["operands"][0]
    return g.node("Reciprocal", [g.node("Sqrt", [_as(g, x, out._dtype)])], hint=op)


def _silu(g, op, inputs, out, info):
    x = _as(g, info["operands"][0], out._dtype)
    return g.node("Mul", [x, g.node("Sigmoid", [x])], hint=op)


def _gelu_expand(g, x, dt, approximate):
    half = g.const(np.asarray(0.5, dt.np))
    one = g.const(np.asarray(1.0, dt.np))
    if approximate == "tanh":
        x3 = g.node("Mul", [g.node("Mul", [x, x]), x])
        inner = g.node("Add", [x, g.node("Mul", [x3, g.const(np.asarray(0.044715, dt.np))])])
        inner = g.node("Mul", [inner, g.const(np.asarray(math.sqrt(2.0 / math.pi), dt.np))])
        t = g.node("Tanh", [inner])
    else:
        t = g.node("Erf", [g.node("Div", [x, g.const(np.asarray(math.sqrt(2.0), dt.np))])])
    return g.node("Mul", [g.node("Mul", [x, half]), g.node("Add", [t, one])], hint="gelu")


def _gelu_node(g, x, dt, approximate):
    if g.opset >= 20:
        return g.node("Gelu", [x], approximate=approximate, hint="gelu")
    return _gelu_expand(g, x, dt, approximate)


def _gelu(g, op, inputs, out, info):
    x = _as(g, info["operands"][0], out._dtype)
    return _gelu_node(g, x, out._dtype, info.get("approximate", "none"))


def _binary(g, op, inputs, out, info):
    a, b = info["operands"][:2]
    dt = out._dtype
    if op == "div" and info.get("rounding_mode") not in (None, "true"):
        mode = info["rounding_mode"]
        if not dt.is_floating_point:
            raise g.unsupported(f"div(rounding_mode={mode!r})", "integer operands")
        q = g.node("Div", [_operand(g, a, dt), _operand(g, b, dt)])
        if mode == "floor":
            return g.node("Floor", [q], hint="div")
        return g.node("Mul", [g.node("Sign", [q]), g.node("Floor", [g.node("Abs", [q])])], hint="div")
    if op == "div" and not dt.is_floating_point:
        raise g.unsupported("div", f"{dt.name} result")
    an, bn = _operand(g, a, dt), _operand(g, b, dt)
    alpha = info.get("alpha")
    if alpha is not None and alpha != 1:
        bn = g.node("Mul", [bn, g.const(np.asarray(alpha, dt.np))])
    if op == "fmod":
        return g.node("Mod", [an, bn], fmod=1 if dt.is_floating_point else 0, hint=op)
    return g.node(_BINARY[op], [an, bn], hint=op)


def _common(a, b):
    ta = a if isinstance(a, Tensor) else None
    tb = b if isinstance(b, Tensor) else None
    from .. import result_type
    return result_type(a if ta is not None else a, b if tb is not None else b)


def _compare(g, op, inputs, out, info):
    a, b = info["operands"][:2]
    dt = _common(a, b)
    r = g.node(_COMPARE[op], [_operand(g, a, dt), _operand(g, b, dt)], hint=op)
    return g.node("Not", [r], hint=op) if op == "ne" else r


def _bool(g, x):
    if isinstance(x, Tensor):
        return _as(g, x, dtypes.bool_)
    return g.const(np.asarray(bool(x)), "scalar")


def _logical(g, op, inputs, out, info):
    a, b = info["operands"][:2]
    return g.node(_LOGICAL[op], [_bool(g, a), _bool(g, b)], hint=op)


def _where(g, op, inputs, out, info):
    c, a, b = info["operands"][:3]
    dt = out._dtype
    return g.node("Where", [_bool(g, c), _operand(g, a, dt), _operand(g, b, dt)], hint=op)


def _masked_fill(g, op, inputs, out, info):
    x, mask, value = info["operands"][:3]
    dt = out._dtype
    return g.node("Where", [_bool(g, mask), _operand(g, value, dt), _operand(g, x, dt)], hint=op)


def _clamp(g, op, inputs, out, info):
    ops_ = list(info["operands"]) + [None, None]
    x, lo, hi = ops_[0], ops_[1], ops_[2]
    lo = info.get("min", lo) if lo is None else lo
    hi = info.get("max", hi) if hi is None else hi
    dt = out._dtype
    r = _as(g, x, dt)
    if isinstance(lo, Tensor) or isinstance(hi, Tensor):
        if lo is not None:
            r = g.node("Max", [r, _operand(g, lo, dt)])
        if hi is not None:
            r = g.node("Min", [r, _operand(g, hi, dt)])
        return r
    return g.node("Clip", [r, "" if lo is None else _operand(g, lo, dt), "" if hi is None else _operand(g, hi, dt)],
                  hint=op)


def _cast(g, op, inputs, out, info):
    x = inputs[0]
    if x._dtype is out._dtype:
        return g.node("Identity", [g.val(x)], hint=op)
    return g.node("Cast", [g.val(x)], to=_onnx_type(g, out._dtype), hint=op)


def _identity(g, op, inputs, out, info):
    return g.node("Identity", [g.val(inputs[0])], hint=op)


# -- shapes --------------------------------------------------------------------------------------------
def _groups(ins, outs):
    """Pairs (input dims, output dims) of a reshape whose sizes have equal products, in order
    (a size-1 dim is a group of its own)."""
    i = j = 0
    res = []
    while i < len(ins) or j < len(outs):
        if j < len(outs) and outs[j] == 1 and (i >= len(ins) or ins[i] != 1):
            res.append(([], [j]))
            j += 1
            continue
        if i < len(ins) and ins[i] == 1 and (j >= len(outs) or outs[j] != 1):
            res.append(([i], []))
            i += 1
            continue
        gi, gj = [i], [j]
        pi, pj = ins[i], outs[j]
        i, j = i + 1, j + 1
        while pi != pj:
            if pi < pj:
                pi *= ins[i]
                gi.append(i)
                i += 1
            else:
                pj *= outs[j]
                gj.append(j)
                j += 1
        res.append((gi, gj))
    return res


def _shape_of(g, name, dims):
    """A 1-D int64 value: the product of the runtime sizes of `name`'s dims `dims`."""
    shape = g.node("Shape", [name])
    r = None
    for d in dims:
        piece = g.node("Gather", [shape, g.ints([d], "dim")], axis=0)
        r = piece if r is None else g.node("Mul", [r, piece])
    return r


def shape_input(g, name, in_shape, out_shape):
    """Reshape's shape input for `name` (of in_shape) -> out_shape. Without dynamic axes: the
    sizes. With them, the dims are matched in groups of equal product: an output dim that keeps
    or merges input dims of a dynamic axis's trace size takes their runtime size (Shape), and a
    split of such a dim infers the part that has the dynamic size (-1)."""
    outs = list(out_shape)
    if not g.dyn_sizes or 0 in in_shape or 0 in out_shape or not outs:
        return g.ints(outs)
    try:
        groups = _groups(list(in_shape), outs)
    except IndexError:
        return g.ints(outs)
    pieces = list(outs)  # an int or a runtime 1-D value per output dim
    alt = g.cur_alt[0] if g.cur_alt else None
    if alt is not None and len(alt) == len(outs):  # the probe run says which output dims follow an axis
        inferred = False
        for gi, gj in groups:
            moving = [j for j in gj if alt[j] != outs[j]]
            if not moving:
                continue
            if len(gj) == 1:
                pieces[gj[0]] = _shape_of(g, name, gi)
                continue
            for j in moving[:-1] if not inferred else moving:
                src = g.dyn_src.get(outs[j])
                pieces[j] = _shape_of(g, src[0], [src[1]]) if src is not None else outs[j]
            if not inferred:
                pieces[moving[-1]] = -1
                inferred = True
        return _pieces(g, pieces)
    inferred = False
    sizes = [d for d in g.dyn_sizes if d > 1]

    def carries(v):  # may hold a dynamic axis (its size a multiple of one); a static dim read at run time is harmless
        return any(v % d == 0 for d in sizes)

    for gi, gj in groups:
        if not gj or not any(carries(in_shape[k]) for k in gi):
            continue
        if len(gj) == 1:
            pieces[gj[0]] = _shape_of(g, name, gi)
            continue
        rest = []
        for j in gj:  # a split: a dim with a dynamic axis's trace size is that axis, read from its graph input
            src = g.dyn_src.get(outs[j])
            if src is not None:
                pieces[j] = _shape_of(g, src[0], [src[1]])
            else:
                rest.append(j)
        gj = rest
        if not inferred and any(carries(outs[j]) for j in gj):
            dyn = [d for d in sizes if any(in_shape[k] % d == 0 for k in gi)]
            for want in (lambda o: o in dyn, lambda o: any(o % d == 0 for d in dyn)):
                hit = [j for j in gj if want(outs[j])]
                if hit:
                    pieces[hit[0]] = -1
                    inferred = True
                    break
    return _pieces(g, pieces)


def _pieces(g, pieces):
    """A 1-D int64 shape value from ints and runtime 1-D values."""
    if all(isinstance(p, int) for p in pieces):
        return g.ints(pieces)
    parts, run = [], []
    for p in pieces:
        if isinstance(p, int):
            run.append(p)
            continue
        if run:
            parts.append(g.ints(run))
            run = []
        parts.append(p)
    if run:
        parts.append(g.ints(run))
    return g.node("Concat", parts, axis=0, hint="shape")


def _reshape(g, op, inputs, out, info):
    x = inputs[0]
    src = g.val(x)
    return g.node("Reshape", [src, shape_input(g, src, tuple(x.shape), tuple(out.shape))], hint=op)


def _unsqueeze(g, op, inputs, out, info):
    return _axes(g, g.val(inputs[0]), [_norm_dim(info["dim"], out.dim())], "Unsqueeze")


def _squeeze(g, op, inputs, out, info):
    x = inputs[0]
    dims = info.get("dims")
    if dims is None:
        dims = (info["dim"],) if "dim" in info else ()
    if isinstance(dims, int):
        dims = (dims,)
    n = x.dim()
    dims = [_norm_dim(d, n) for d in dims] if dims else [i for i, s in enumerate(x.shape) if s == 1]
    dims = [d for d in dims if x.shape[d] == 1]
    if not dims:
        return g.node("Identity", [g.val(x)])
    return _axes(g, g.val(x), dims, "Squeeze")


def _expand(g, op, inputs, out, info):
    x = inputs[0]
    ins, outs = tuple(x.shape), tuple(out.shape)
    pad = len(outs) - len(ins)
    target = [1 if i >= pad and ins[i - pad] == o else o for i, o in enumerate(outs)]
    alt = g.cur_alt[0] if g.cur_alt else None
    if alt is not None and len(alt) == len(outs):  # a new size that follows a dynamic axis: read at run time
        for i, o in enumerate(outs):
            src = g.dyn_src.get(o)
            if target[i] != 1 and alt[i] != o and src is not None:
                target[i] = _shape_of(g, src[0], [src[1]])
    return g.node("Expand", [g.val(x), _pieces(g, target)], hint=op)


def _permute(g, op, inputs, out, info):
    n = inputs[0].dim()
    return g.node("Transpose", [g.val(inputs[0])], perm=[_norm_dim(d, n) for d in info["dims"]], hint=op)


def _transpose(g, op, inputs, out, info):
    x = inputs[0]
    n = x.dim()
    perm = list(range(n))
    if op in ("t", "numpy_T") or "dim0" not in info:
        perm = perm[::-1]
    else:
        a, b = _norm_dim(info["dim0"], n), _norm_dim(info["dim1"], n)
        perm[a], perm[b] = perm[b], perm[a]
    return g.node("Transpose", [g.val(x)], perm=perm, hint="transpose")


def _slice(g, name, dim, start, end, step, size):
    if end >= size:
        end = INT64_MAX
    return g.node("Slice", [name, g.ints([start]), g.ints([end]), g.ints([dim]), g.ints([step])], hint="slice")


def _narrow(g, op, inputs, out, info):
    x = inputs[0]
    dim = _norm_dim(info["dim"], x.dim())
    start, step = info.get("start", 0), info.get("step", 1)
    size = x.shape[dim]
    start = start + size if start < 0 else start
    end = start + step * out.shape[dim]
    return _slice(g, g.val(x), dim, start, min(end, size), step, size)


def _select(g, op, inputs, out, info):
    x = inputs[0]
    dim = _norm_dim(info["dim"], x.dim())
    return g.node("Gather", [g.val(x), g.const(np.asarray(info["index"], np.int64), "index")], axis=dim, hint=op)


def _getitem(g, op, inputs, out, info):
    """The basic part of an index (ints, slices, None, Ellipsis); tensor indices are the `index`
    op's, which tensorlab records next (here they keep their dims)."""
    x = inputs[0]
    index = info["index"]
    if not isinstance(index, tuple):
        index = (index,)
    flat = []
    for i in index:
        if isinstance(i, Tensor):
            if i._dtype is dtypes.bool_ and g.is_dynamic(i):
                raise g.unsupported("getitem", "a boolean mask computed from the inputs (the result's shape depends "
                                               "on the data)")
            flat.extend([slice(None)] * (i.dim() if i._dtype is dtypes.bool_ else 1))
        else:
            flat.append(i)
    n_real = sum(1 for i in flat if i is not None and i is not Ellipsis)
    expanded = []
    for i in flat:
        if i is Ellipsis:
            expanded.extend([slice(None)] * (x.dim() - n_real))
        else:
            expanded.append(i)
    src = g.val(x)
    name, shape, axis = src, list(x.shape), 0
    for i in expanded:
        if i is None:
            name = _axes(g, name, [axis], "Unsqueeze")
            shape.insert(axis, 1)
            axis += 1
        elif isinstance(i, bool):
            raise g.unsupported("getitem", "a bool index")
        elif isinstance(i, int):
            name = g.node("Gather", [name, g.const(np.asarray(i, np.int64), "index")], axis=axis)
            shape.pop(axis)
        elif isinstance(i, slice):
            size = shape[axis]
            start, stop, step = i.indices(size)
            if (start, stop, step) != (0, size, 1):
                name = _slice(g, name, axis, start, stop, step, size)
                shape[axis] = len(range(start, stop, step))
            axis += 1
        else:
            raise g.unsupported("getitem", f"an index of type {type(i).__name__}")
    return name if name != src else g.node("Identity", [name])


def _index(g, op, inputs, out, info):
    """Advanced indexing: integer index tensors at some dims (broadcast together). One index: Gather;
    several: GatherND over the indexed dims moved to the front, the result placed where torch puts
    it (at the first indexed dim when they are adjacent, else in front)."""
    x = inputs[0]
    idx = list(info["indices"]) + [None] * (x.dim() - len(info["indices"]))
    dims = [d for d, t in enumerate(idx) if t is not None]
    for d in dims:
        if idx[d]._dtype.is_floating_point or idx[d]._dtype is dtypes.bool_:
            raise g.unsupported("index", f"an index of dtype {idx[d]._dtype.name}")
    if len(dims) == 1:
        d = dims[0]
        return g.node("Gather", [g.val(x), _as(g, idx[d], dtypes.int64)], axis=d, hint=op)
    rest = [d for d in range(x.dim()) if d not in dims]
    xt = g.node("Transpose", [g.val(x)], perm=dims + rest)
    bshape = np.broadcast_shapes(*[tuple(idx[d].shape) for d in dims])
    parts = []
    for d in dims:
        t = _as(g, idx[d], dtypes.int64)
        t = g.node("Expand", [t, g.ints(bshape)])
        parts.append(_axes(g, t, [len(bshape)], "Unsqueeze"))
    r = g.node("GatherND", [xt, g.node("Concat", parts, axis=-1)], hint=op)
    nb = len(bshape)
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    if adjacent and dims[0] > 0:
        first = dims[0]
        perm = list(range(nb, nb + first)) + list(range(nb)) + list(range(nb + first, nb + len(rest)))
        r = g.node("Transpose", [r], perm=perm, hint=op)
    return r


def _index_select(g, op, inputs, out, info):
    x, idx = inputs[0], inputs[1]
    return g.node("Gather", [g.val(x), _as(g, idx, dtypes.int64)], axis=_norm_dim(info["dim"], x.dim()), hint=op)


def _take_rows(g, op, inputs, out, info):
    """A gather along dim by an index the op computed from the geometry (reflect/replicate/circular
    padding, nearest upsampling): the index is a constant of the graph."""
    x = inputs[0]
    idx = g.const(g.host(info["index"]).astype(np.int64), "index")
    return g.node("Gather", [g.val(x), idx], axis=_norm_dim(info["dim"], x.dim()), hint=op)


def _cat(g, op, inputs, out, info):
    dim = _norm_dim(info.get("dim", 0), out.dim())
    names = [_as(g, t, out._dtype) for t in inputs if t.numel() > 0 or t.dim() != 1]
    if op == "stack":
        names = [_axes(g, n, [dim], "Unsqueeze") for n in names]
    return g.node("Concat", names, axis=dim, hint=op)


# -- reductions ----------------------------------------------------------------------------------------
_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "amax": "ReduceMax", "amin": "ReduceMin", "prod": "ReduceProd",
           "max": "ReduceMax", "min": "ReduceMin", "logsumexp": "ReduceLogSumExp"}


def _reduce_dims(x, info):
    dim = info.get("dim")
    if dim is None or dim == ():
        return list(range(x.dim()))
    if isinstance(dim, int):
        dim = (dim,)
    return [_norm_dim(d, x.dim()) for d in dim]


def _reduce(g, op, inputs, out, info):
    x = inputs[0]
    dims = _reduce_dims(x, info)
    keep = 1 if info.get("keepdim") else 0
    if x.dim() == 0:
        return g.node("Identity", [_as(g, x, out._dtype)])
    r = _axes(g, _as(g, x, out._dtype), dims, _REDUCE[op], keepdims=keep)
    idx = info.get("indices")
    if op in ("max", "min") and isinstance(idx, Tensor) and len(dims) == 1:
        am = g.node("ArgMax" if op == "max" else "ArgMin", [g.val(x)], axis=dims[0], keepdims=keep)
        g.bind(idx, am)
    return r


def _any_all(g, op, inputs, out, info):
    x = inputs[0]
    dims = _reduce_dims(x, info)
    keep = 1 if info.get("keepdim") else 0
    xb = _bool(g, x)
    if op == "all":  # all(x) = not any(not x); Reduce* over int32 (bool reductions need opset 20)
        xb = g.node("Not", [xb])
    r = _axes(g, g.node("Cast", [xb], to=g.onnx.TensorProto.INT32), dims, "ReduceMax", keepdims=keep)
    r = g.node("Cast", [r], to=g.onnx.TensorProto.BOOL)
    r = g.node("Not", [r], hint=op) if op == "all" else r
    return r if out._dtype is dtypes.bool_ else g.node("Cast", [r], to=_onnx_type(g, out._dtype))


def _var(g, op, inputs, out, info):
    x = inputs[0]
    dims = _reduce_dims(x, info)
    keep = 1 if info.get("keepdim") else 0
    corr = info.get("arg", 1)
    corr = 1 if corr is None else corr
    dt = out._dtype
    xn = _as(g, x, dt)
    mean = _axes(g, xn, dims, "ReduceMean", keepdims=1)
    d = g.node("Sub", [xn, mean])
    s = _axes(g, g.node("Mul", [d, d]), dims, "ReduceSum", keepdims=keep)
    n = int(np.prod([x.shape[i] for i in dims])) - corr
    v = g.node("Div", [s, g.const(np.asarray(max(n, 0), dt.np))])
    return g.node("Sqrt", [v], hint=op) if op == "std" else v


def _softmax(g, op, inputs, out, info):
    x = inputs[0]
    return g.node("Softmax" if op in ("softmax", "_softmax") else "LogSoftmax", [_as(g, x, out._dtype)],
                  axis=_norm_dim(info["dim"], max(x.dim(), 1)), hint=op)


# -- linear algebra ------------------------------------------------------------------------------------
def _matmul(g, op, inputs, out, info):
    a, b = inputs[:2]
    return g.node("MatMul", [_as(g, a, out._dtype), _as(g, b, out._dtype)], hint=op)


def _linear_node(g, x, w, b, dt):
    if x.dim() == 2:
        ins = [_as(g, x, dt), _as(g, w, dt)] + ([_as(g, b, dt)] if b is not None else [])
        return g.node("Gemm", ins, transB=1, hint="linear")
    wt = g.node("Transpose", [_as(g, w, dt)], perm=[1, 0])
    y = g.node("MatMul", [_as(g, x, dt), wt], hint="linear")
    if b is not None:
        y = g.node("Add", [y, _as(g, b, dt)], hint="linear")
    return y


def _linear(g, op, inputs, out, info):
    x, w = inputs[0], inputs[1]
    b = inputs[2] if len(inputs) > 2 else None
    if w.dim() == 1:
        y = g.node("MatMul", [_as(g, x, out._dtype), _as(g, w, out._dtype)])
        return y if b is None else g.node("Add", [y, _as(g, b, out._dtype)])
    return _linear_node(g, x, w, b, out._dtype)


def _addmm(g, op, inputs, out, info):
    bias, a, b = inputs[:3]
    dt = out._dtype
    return g.node("Gemm", [_as(g, a, dt), _as(g, b, dt), _as(g, bias, dt)], alpha=float(info.get("alpha", 1.0)),
                  beta=float(info.get("beta", 1.0)), hint=op)


def _cumsum(g, op, inputs, out, info):
    x = inputs[0]
    axis = g.const(np.asarray(_norm_dim(info["dim"], max(x.dim(), 1)), np.int64), "axis")
    return g.node("CumSum", [_as(g, x, out._dtype), axis], hint=op)


def _arg_dim(x, out):
    """The dim argmax/argmin reduced (not recorded): the one whose removal (or size 1) gives out's shape."""
    ins, outs = tuple(x.shape), tuple(out.shape)
    hits = [d for d in range(len(ins)) if ins[:d] + ins[d + 1:] == outs or ins[:d] + (1,) + ins[d + 1:] == outs]
    return hits


def _argmax(g, op, inputs, out, info):
    x = inputs[0]
    onnx_op = "ArgMax" if op == "argmax" else "ArgMin"
    if out.dim() == 0:
        flat = g.node("Reshape", [g.val(x), g.ints([-1])])
        return g.node(onnx_op, [flat], axis=0, keepdims=0, hint=op)
    hits = _arg_dim(x, out)
    if len(set(x.shape[d] for d in hits)) != 1 or not hits:
        raise g.unsupported(op, "the reduced dim cannot be told from the shapes")
    d = hits[0]
    keep = int(out.dim() == x.dim())
    if len(hits) > 1:  # several dims fit: they have the same size, the values decide
        xs, want = g.host(x), g.host(out)
        fn = np.argmax if op == "argmax" else np.argmin
        ok = [h for h in hits if np.array_equal(fn(xs, axis=h).reshape(want.shape), want)]
        if not ok:
            raise g.unsupported(op, "the reduced dim cannot be told from the shapes")
        d = ok[0]
    return g.node(onnx_op, [g.val(x)], axis=d, keepdims=keep, select_last_index=0, hint=op)


def _topk(g, op, inputs, out, info):
    """topk and sort as TopK; largest/descending read from the traced result (the options are not recorded)."""
    x = inputs[0]
    d = _norm_dim(info.get("dim", -1), max(x.dim(), 1))
    k = out.shape[d] if out.dim() else 1
    vals = g.host(out)
    diffs = np.diff(vals, axis=d) if out.dim() and out.shape[d] > 1 else np.zeros(1)
    largest = 0 if (diffs > 0).any() else 1  # a descending result: the largest first
    if not (diffs != 0).any() and out.numel():  # one element per row (or ties): compare with the input's extremes
        xs = g.host(x)
        largest = int(np.array_equal(np.take(vals, [0], axis=d), np.max(xs, axis=d, keepdims=True)))
    if op == "sort" and (diffs > 0).any() and (diffs < 0).any():
        raise g.unsupported("sort", "a result neither ascending nor descending")
    res = g.node("TopK", [g.val(x), g.ints([k], "k")], n_out=2, axis=d, largest=largest, sorted=1, hint=op)
    idx = info.get("indices")
    if isinstance(idx, Tensor):
        g.bind(idx, res[1])
    return res[0]


def _flip(g, op, inputs, out, info):
    x = inputs[0]
    dims = [_norm_dim(d, x.dim()) for d in info["dims"]]
    n = len(dims)
    return g.node("Slice", [g.val(x), g.ints([-1] * n), g.ints([-INT64_MAX - 1] * n), g.ints(dims),
                            g.ints([-1] * n)], hint=op)


def _trilu(g, op, inputs, out, info):
    k = g.const(np.asarray(info.get("diagonal", 0), np.int64), "k")
    return g.node("Trilu", [g.val(inputs[0]), k], upper=int(op == "triu"), hint=op)


def _gather(g, op, inputs, out, info):
    x, idx = inputs[0], inputs[1]
    return g.node("GatherElements", [g.val(x), _as(g, idx, dtypes.int64)], axis=_norm_dim(info["dim"], x.dim()),
                  hint=op)


def _log_base(g, op, inputs, out, info):
    dt = out._dtype
    x = _as(g, info["operands"][0], dt)
    if op == "exp2":
        return g.node("Pow", [g.const(np.asarray(2.0, dt.np)), x], hint=op)
    base = 2.0 if op == "log2" else 10.0
    return g.node("Div", [g.node("Log", [x]), g.const(np.asarray(math.log(base), dt.np))], hint=op)


def _square(g, op, inputs, out, info):
    x = _as(g, info["operands"][0], out._dtype)
    return g.node("Mul", [x, x], hint=op)


def _trunc(g, op, inputs, out, info):
    x = _as(g, info["operands"][0], out._dtype)
    if not out._dtype.is_floating_point:
        return g.node("Identity", [x])
    return g.node("Mul", [g.node("Sign", [x]), g.node("Floor", [g.node("Abs", [x])])], hint=op)


def _floor_ops(g, op, inputs, out, info):
    """floor_divide and remainder (Python's sign rules) over floating results: a - b * floor(a / b)."""
    a, b = info["operands"][:2]
    dt = out._dtype
    if not dt.is_floating_point:
        raise g.unsupported(op, f"{dt.name} operands (ONNX's integer Div truncates)")
    an, bn = _operand(g, a, dt), _operand(g, b, dt)
    q = g.node("Floor", [g.node("Div", [an, bn])])
    if op == "floor_divide":
        return g.node("Identity", [q], hint=op)
    return g.node("Sub", [an, g.node("Mul", [bn, q])], hint=op)


def _norm(g, op, inputs, out, info):
    x = inputs[0]
    p = info.get("arg", 2.0)
    p = 2.0 if p is None else p
    dims = _reduce_dims(x, info)
    keep = 1 if info.get("keepdim") else 0
    xn = _as(g, x, out._dtype)
    if p == 2:
        return _axes(g, xn, dims, "ReduceL2", keepdims=keep)
    if p == 1:
        return _axes(g, xn, dims, "ReduceL1", keepdims=keep)
    if p == math.inf:
        return _axes(g, g.node("Abs", [xn]), dims, "ReduceMax", keepdims=keep)
    raise g.unsupported(op, f"p={p}")


def _roll(g, op, inputs, out, info):
    x = inputs[0]
    shifts, dims = list(info["shifts"]), list(info.get("dims") or [])
    name, shape = g.val(x), list(x.shape)
    if not dims:  # torch: the flattened tensor rolled, the shape restored
        name, shape, dims = g.node("Reshape", [name, g.ints([-1])]), [x.numel()], [0]
    for sh, d in zip(shifts, dims):
        d = _norm_dim(d, len(shape))
        n = shape[d]
        sh = sh % n if n else 0
        if sh:
            tail = g.node("Slice", [name, g.ints([n - sh]), g.ints([n]), g.ints([d])])
            head = g.node("Slice", [name, g.ints([0]), g.ints([n - sh]), g.ints([d])])
            name = g.node("Concat", [tail, head], axis=d)
    if not info.get("dims"):
        name = g.node("Reshape", [name, g.ints(list(x.shape))])
    return g.node("Identity", [name], hint=op)


def _outer(g, op, inputs, out, info):
    a, b = inputs[:2]
    dt = out._dtype
    return g.node("Mul", [_axes(g, _as(g, a, dt), [1], "Unsqueeze"), _axes(g, _as(g, b, dt), [0], "Unsqueeze")],
                  hint=op)


HOOK = {}
for _n in _UNARY:
    HOOK[_n] = _unary
for _n in _BINARY:
    HOOK[_n] = _binary
for _n in _COMPARE:
    HOOK[_n] = _compare
for _n in _LOGICAL:
    HOOK[_n] = _logical
for _n in _REDUCE:
    HOOK[_n] = _reduce
HOOK.update({
    "cumsum": _cumsum, "argmax": _argmax, "argmin": _argmax, "topk": _topk, "sort": _topk, "flip": _flip,
    "tril": _trilu, "triu": _trilu, "gather": _gather, "log2": _log_base, "log10": _log_base, "exp2": _log_base,
    "square": _square, "trunc": _trunc, "floor_divide": _floor_ops, "remainder": _floor_ops, "norm": _norm,
    "roll": _roll, "outer": _outer, "ger": _outer,
    "rsqrt": _rsqrt, "expm1": _expm1_log1p, "log1p": _expm1_log1p, "silu": _silu, "gelu": _gelu, "where": _where,
    "masked_fill": _masked_fill, "clamp": _clamp, "to": _cast, "_to_copy": _cast, "type": _cast,
    "clone": _identity, "contiguous": _identity, "alias": _identity, "detach": _identity, "view": _reshape,
    "reshape": _reshape, "_unsafe_view": _reshape, "flatten": _reshape, "unflatten": _reshape, "view_as": _reshape,
    "reshape_as": _reshape, "unsqueeze": _unsqueeze, "squeeze": _squeeze, "expand": _expand, "expand_as": _expand,
    "permute": _permute, "transpose": _transpose, "t": _transpose, "narrow": _narrow, "split": _narrow,
    "slice": _narrow, "select": _select, "getitem": _getitem, "index": _index, "index_select": _index_select,
    "take_rows": _take_rows, "cat": _cat, "concat": _cat, "stack": _cat, "var": _var, "std": _var, "any": _any_all,
    "all": _any_all, "softmax": _softmax, "_softmax": _softmax, "log_softmax": _softmax, "matmul": _matmul,
    "mm": _matmul, "bmm": _matmul, "linear": _linear, "addmm": _addmm,
})


# -- leaf functions ------------------------------------------------------------------------------------
def _tup(v, n):
    if isinstance(v, int):
        return [v] * n
    v = list(v)
    return v * n if len(v) == 1 else v


def _conv(g, a, out):
    x, w, b = a["input"], a["weight"], a.get("bias")
    n = x.dim() - 2
    dt = out._dtype
    k = list(w.shape[2:])
    dil = _tup(a.get("dilation", 1), n)
    pad = a.get("padding", 0)
    if isinstance(pad, str):
        if pad == "valid":
            pads = [0] * (2 * n)
        else:  # "same": torch puts the odd extra on the end side
            tot = [d * (kk - 1) for d, kk in zip(dil, k)]
            pads = [t // 2 for t in tot] + [t - t // 2 for t in tot]
    else:
        p = _tup(pad, n)
        pads = p + p
    ins = [_as(g, x, dt), _as(g, w, dt)] + ([_as(g, b, dt)] if b is not None else [])
    return g.node("Conv", ins, kernel_shape=k, strides=_tup(a.get("stride", 1), n), pads=pads, dilations=dil,
                  group=int(a.get("groups", 1)), hint="conv")


def _conv_padded(g, a, out):
    """nn.ConvNd with padding_mode reflect/replicate/circular: Pad in that mode, then an unpadded Conv."""
    x, w = a["input"], a["weight"]
    n = x.dim() - 2
    k = list(w.shape[2:])
    dil = _tup(a.get("dilation", 1), n)
    pad = a.get("padding", 0)
    if pad == "same":
        tot = [d * (kk - 1) for d, kk in zip(dil, k)]
        pairs = [(t // 2, t - t // 2) for t in tot]
    elif pad == "valid":
        pairs = [(0, 0)] * n
    else:
        pairs = [(p, p) for p in _tup(pad, n)]
    flat = [v for lo_hi in reversed(pairs) for v in lo_hi]  # F.pad's order: the last dim first
    padded = _pad(g, {"input": x, "pad": flat, "mode": a["padding_mode"], "value": None}, out)
    bias = [_as(g, a["bias"], out._dtype)] if a.get("bias") is not None else []
    return g.node("Conv", [padded, _as(g, w, out._dtype)] + bias,
                  kernel_shape=k, strides=_tup(a.get("stride", 1), n), pads=[0] * (2 * n), dilations=dil,
                  group=int(a.get("groups", 1)), hint="conv")


def _conv_transpose(g, a, out):
    x, w, b = a["input"], a["weight"], a.get("bias")
    n = x.dim() - 2
    dt = out._dtype
    p = _tup(a.get("padding", 0), n)
    ins = [_as(g, x, dt), _as(g, w, dt)] + ([_as(g, b, dt)] if b is not None else [])
    return g.node("ConvTranspose", ins, kernel_shape=list(w.shape[2:]), strides=_tup(a.get("stride", 1), n),
                  pads=p + p, dilations=_tup(a.get("dilation", 1), n),
                  output_padding=_tup(a.get("output_padding", 0), n), group=int(a.get("groups", 1)),
                  hint="conv_transpose")


def _pool_args(g, a, x, name):
    n = x.dim() - 2
    k = _tup(a["kernel_size"], n)
    s = a.get("stride")
    s = k if s is None or (not isinstance(s, int) and len(s) == 0) else _tup(s, n)
    p = _tup(a.get("padding", 0), n)
    return k, s, p + p


def _max_pool(g, a, out):
    x = a["input"]
    if a.get("return_indices"):
        raise g.unsupported("max_pool with return_indices=True", "ONNX MaxPool's indices are flat over the "
                                                                 "whole tensor, torch's per plane")
    k, s, pads = _pool_args(g, a, x, "max_pool")
    n = x.dim() - 2
    return g.node("MaxPool", [g.val(x)], kernel_shape=k, strides=s, pads=pads,
                  dilations=_tup(a.get("dilation", 1), n), ceil_mode=int(bool(a.get("ceil_mode"))), hint="max_pool")


def _avg_pool(g, a, out):
    x = a["input"]
    if a.get("divisor_override"):
        raise g.unsupported("avg_pool with divisor_override", "ONNX AveragePool has no divisor")
    k, s, pads = _pool_args(g, a, x, "avg_pool")
    return g.node("AveragePool", [g.val(x)], kernel_shape=k, strides=s, pads=pads,
                  ceil_mode=int(bool(a.get("ceil_mode"))),
                  count_include_pad=int(bool(a.get("count_include_pad", True))),
                  hint="avg_pool")


def _adaptive(kind):
    def conv(g, a, out):
        x = a["input"]
        if a.get("return_indices"):
            raise g.unsupported(f"adaptive_{kind}_pool with return_indices=True")
        ins, outs = list(x.shape[2:]), list(out.shape[2:])
        if all(o == 1 for o in outs):
            return g.node("GlobalAveragePool" if kind == "avg" else "GlobalMaxPool", [g.val(x)],
                          hint=f"adaptive_{kind}")
        if any(o == 0 or i % o for i, o in zip(ins, outs)):
            raise g.unsupported(f"adaptive_{kind}_pool", f"input size {ins} not a multiple of output size {outs}: "
                                                         f"the windows overlap unevenly")
        k = [i // o for i, o in zip(ins, outs)]
        return g.node("AveragePool" if kind == "avg" else "MaxPool", [g.val(x)], kernel_shape=k, strides=k,
                      hint=f"adaptive_{kind}")
    return conv


def _batch_norm(g, a, out):
    x = a["input"]
    if a.get("training"):
        raise g.unsupported("batch_norm in training mode", "export the model in eval mode "
                                                           "(training=TrainingMode.EVAL, the default)")
    rm, rv = a.get("running_mean"), a.get("running_var")
    if rm is None or rv is None:
        raise g.unsupported("batch_norm without running statistics")
    dt = out._dtype
    c = x.shape[1]
    w, b = a.get("weight"), a.get("bias")
    wn = _as(g, w, dt) if w is not None else g.const(np.ones(c, dt.np), "ones")
    bn = _as(g, b, dt) if b is not None else g.const(np.zeros(c, dt.np), "zeros")
    return g.node("BatchNormalization", [_as(g, x, dt), wn, bn, _as(g, rm, dt), _as(g, rv, dt)],
                  epsilon=float(a.get("eps", 1e-5)), hint="batch_norm")


def _layer_norm(g, a, out):
    x = a["input"]
    ns = a["normalized_shape"]
    ns = [ns] if isinstance(ns, int) else list(ns)
    dt = out._dtype
    eps = float(a.get("eps", 1e-5))
    w, b = a.get("weight"), a.get("bias")
    xn = _as(g, x, dt)
    if g.opset >= 17:
        wn = _as(g, w, dt) if w is not None else g.const(np.ones(ns, dt.np), "ones")
        ins = [xn, wn] + ([_as(g, b, dt)] if b is not None else [])
        return g.node("LayerNormalization", ins, axis=-len(ns), epsilon=eps, hint="layer_norm")
    axes = list(range(x.dim() - len(ns), x.dim()))
    mean = _axes(g, xn, axes, "ReduceMean", keepdims=1)
    d = g.node("Sub", [xn, mean])
    var = _axes(g, g.node("Mul", [d, d]), axes, "ReduceMean", keepdims=1)
    y = g.node("Div", [d, g.node("Sqrt", [g.node("Add", [var, g.const(np.asarray(eps, dt.np))])])])
    if w is not None:
        y = g.node("Mul", [y, _as(g, w, dt)])
    if b is not None:
        y = g.node("Add", [y, _as(g, b, dt)])
    return y


def _rms_norm(g, a, out):
    x = a["input"]
    ns = a["normalized_shape"]
    ns = [ns] if isinstance(ns, int) else list(ns)
    dt = out._dtype
    eps = a.get("eps")
    eps = float(np.finfo(dt.np).eps) if eps is None else float(eps)
    xn = _as(g, x, dt)
    axes = list(range(x.dim() - len(ns), x.dim()))
    ms = _axes(g, g.node("Mul", [xn, xn]), axes, "ReduceMean", keepdims=1)
    rms = g.node("Sqrt", [g.node("Add", [ms, g.const(np.asarray(eps, dt.np))])])
    y = g.node("Mul", [xn, g.node("Reciprocal", [rms])], hint="rms_norm")
    w = a.get("weight")
    return y if w is None else g.node("Mul", [y, _as(g, w, dt)], hint="rms_norm")


def _group_norm(g, a, out):
    x = a["input"]
    ng = int(a["num_groups"])
    dt = out._dtype
    eps = float(a.get("eps", 1e-5))
    c = x.shape[1]
    xn = _as(g, x, dt)
    r = g.node("Reshape", [xn, g.ints([0, ng, -1])])
    mean = _axes(g, r, [2], "ReduceMean", keepdims=1)
    d = g.node("Sub", [r, mean])
    var = _axes(g, g.node("Mul", [d, d]), [2], "ReduceMean", keepdims=1)
    y = g.node("Div", [d, g.node("Sqrt", [g.node("Add", [var, g.const(np.asarray(eps, dt.np))])])])
    y = g.node("Reshape", [y, g.ints([0] + list(x.shape[1:]))])
    shape = [c] + [1] * (x.dim() - 2)
    w, b = a.get("weight"), a.get("bias")
    if w is not None:
        y = g.node("Mul", [y, g.node("Reshape", [_as(g, w, dt), g.ints(shape)])])
    if b is not None:
        y = g.node("Add", [y, g.node("Reshape", [_as(g, b, dt), g.ints(shape)])])
    return y


def _embedding(g, a, out):
    if a.get("max_norm") is not None:
        raise g.unsupported("embedding with max_norm", "it renormalizes the weight in place during the forward")
    return g.node("Gather", [g.val(a["weight"]), _as(g, a["input"], dtypes.int64)], axis=0, hint="embedding")


def _pad(g, a, out):
    x = a["input"]
    pad = list(a["pad"])
    mode = a.get("mode", "constant")
    n = x.dim()
    begins, ends = [0] * n, [0] * n
    for i in range(len(pad) // 2):
        begins[n - 1 - i], ends[n - 1 - i] = pad[2 * i], pad[2 * i + 1]
    modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
    if mode not in modes:
        raise g.unsupported(f"pad(mode={mode!r})")
    if mode == "circular" and g.opset < 19:
        raise g.unsupported("pad(mode='circular')", since=19)
    ins = [g.val(x), g.ints(begins + ends, "pads")]
    if mode == "constant":
        v = a.get("value")
        ins.append(g.const(np.asarray(0 if v is None else v, x._dtype.np), "pad_value"))
    return g.node("Pad", ins, mode=modes[mode], hint="pad")


def _interpolate(g, a, out):
    x = a["input"]
    mode = a.get("mode", "nearest")
    if a.get("antialias"):
        raise g.unsupported("interpolate(antialias=True)")
    n = x.dim() - 2
    sf = a.get("scale_factor")
    ins, outs = list(x.shape[2:]), list(out.shape[2:])
    if sf is not None and not a.get("recompute_scale_factor"):
        scales = [float(s) for s in _tup(sf, n)] if not isinstance(sf, float) else [float(sf)] * n
    else:
        scales = [o / i for i, o in zip(ins, outs)]
    attrs = {}
    if mode == "nearest":
        attrs = dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    elif mode in ("linear", "bilinear", "trilinear", "bicubic"):
        ac = a.get("align_corners")
        attrs = dict(mode="cubic" if mode == "bicubic" else "linear",
                     coordinate_transformation_mode="align_corners" if ac else "pytorch_half_pixel")
        if mode == "bicubic":
            attrs["cubic_coeff_a"] = -0.75
    else:
        raise g.unsupported(f"interpolate(mode={mode!r})")
    if sf is None or a.get("recompute_scale_factor"):  # sizes: the spatial sizes only (axes from 18)
        if g.opset >= 18:
            sizes = g.ints(outs, "sizes")
            attrs["axes"] = list(range(2, x.dim()))
        else:
            sizes = g.ints(list(out.shape), "sizes")
        return g.node("Resize", [g.val(x), "", "", sizes], hint="interpolate", **attrs)
    sc = g.const(np.asarray([1.0, 1.0] + scales, np.float32), "scales")
    return g.node("Resize", [g.val(x), "", sc], hint="interpolate", **attrs)


def _sdpa(g, a, out):
    q, k, v = a["query"], a["key"], a["value"]
    if a.get("dropout_p"):
        raise g.unsupported("scaled_dot_product_attention with dropout_p > 0", "attention dropout is random")
    if a.get("enable_gqa") and q.shape[-3] != k.shape[-3]:
        raise g.unsupported("scaled_dot_product_attention with enable_gqa")
    dt = out._dtype
    scale = a.get("scale")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    nk = k.dim()
    perm = list(range(nk))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    mask = a.get("attn_mask")
    s = g.node("MatMul", [g.node("Mul", [_as(g, q, dt), g.const(np.asarray(scale, dt.np))]),
                          g.node("Transpose", [_as(g, k, dt)], perm=perm)])
    masked = False
    if a.get("is_causal") or mask is not None and mask._dtype is dtypes.bool_:
        neg = g.const(np.asarray(-np.inf, dt.np), "neg_inf")
    if a.get("is_causal"):
        L, S = q.shape[-2], k.shape[-2]
        s = g.node("Where", [g.const(np.tril(np.ones((L, S), bool)), "causal"), s, neg])
        masked = True
    if mask is not None:
        if mask._dtype is dtypes.bool_:
            s = g.node("Where", [g.val(mask), s, neg])
        else:
            s = g.node("Add", [s, _as(g, mask, dt)])
        masked = True
    p = g.node("Softmax", [s], axis=-1)
    if masked:  # torch's math path: a row with every position masked attends to nothing (zeros, not NaN)
        p = g.node("Where", [g.node("IsNaN", [p]), g.const(np.asarray(0, dt.np)), p])
    return g.node("MatMul", [p, _as(g, v, dt)], hint="attention")


def _dropout(g, a, out):
    if a.get("training") and a.get("p", 0.5) > 0:
        raise g.unsupported("dropout in training mode", "export in eval mode (training=TrainingMode.EVAL)")
    return g.node("Identity", [g.val(a["input"])], hint="dropout")


def _gelu_leaf(g, a, out):
    return _gelu_node(g, _as(g, a["input"], out._dtype), out._dtype, a.get("approximate", "none"))


_GATES = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2]}  # torch's (i f g o), (r z n) in ONNX's (i o f c), (z r h)


def _rnn_stack(g, a, out):
    """RNNBase._stack_layers (every layer, sequence first): one ONNX LSTM/GRU/RNN node per layer
    (direction forward or bidirectional), the weights' gate blocks reordered with Split/Concat."""
    m, x, h0, c0 = a["self"], a["x"], a["h0"], a.get("c0")
    mode = m.mode
    if m.proj_size:
        raise g.unsupported("LSTM with proj_size", "ONNX LSTM has no projection")
    n_gates = {"LSTM": 4, "GRU": 3}.get(mode, 1)
    hidden = m.hidden_size
    dirs = 2 if m.bidirectional else 1
    dt = out[0]._dtype
    order = _GATES.get(mode, [0])

    def gates(t):
        if t is None:
            return g.const(np.zeros(n_gates * hidden, dt.np), "zeros")
        name = _as(g, t, dt)
        if n_gates == 1:
            return name
        parts = g.node("Split", [name, g.ints([hidden] * n_gates, "split")], n_out=n_gates, axis=0)
        return g.node("Concat", [parts[i] for i in order], axis=0)

    def first(names):
        return names[0] if len(names) == 1 else g.node("Concat", names, axis=0)

    def state(t, layer):
        if t is None or (not g.is_dynamic(t) and not g.host(t).any()):
            return ""  # zeros: ONNX's default initial state, at whatever batch size runs
        return g.node("Slice", [_as(g, t, dt), g.ints([layer * dirs]), g.ints([layer * dirs + dirs]), g.ints([0])])

    op_type = {"LSTM": "LSTM", "GRU": "GRU"}.get(mode, "RNN")
    attrs = {"hidden_size": hidden, "direction": "bidirectional" if dirs == 2 else "forward"}
    if mode == "GRU":
        attrs["linear_before_reset"] = 1
    if mode in ("RNN_TANH", "RNN_RELU"):
        attrs["activations"] = ["Tanh" if mode == "RNN_TANH" else "Relu"] * dirs
    seq = _as(g, x, dt)
    hs, cs = [], []
    for layer in range(m.num_layers):
        ws, rs, bs = [], [], []
        for d in range(dirs):
            w_ih, w_hh, b_ih, b_hh, _ = m._layer_weights(layer, d)
            ws.append(_axes(g, gates(w_ih), [0], "Unsqueeze"))
            rs.append(_axes(g, gates(w_hh), [0], "Unsqueeze"))
            bs.append(_axes(g, g.node("Concat", [gates(b_ih), gates(b_hh)], axis=0), [0], "Unsqueeze"))
        ins = [seq, first(ws), first(rs), first(bs), "", state(h0, layer)]
        if mode == "LSTM":
            ins.append(state(c0, layer))
        while ins[-1] == "":
            ins.pop()
        res = g.node(op_type, ins, n_out=3 if mode == "LSTM" else 2, hint=mode.lower(), **attrs)
        y = g.node("Transpose", [res[0]], perm=[0, 2, 1, 3])        # [T, B, D, H]
        seq = g.node("Reshape", [y, g.ints([0, 0, -1])])            # [T, B, D*H]
        hs.append(res[1])
        if mode == "LSTM":
            cs.append(res[2])
    names = [g.node("Identity", [seq]), first(hs)]
    if mode == "LSTM":
        names.append(first(cs))
    return names


def _runtime_size(g, size):
    """A 1-D int64 value holding the run-time size of the dynamic axis whose example size is `size`."""
    src = g.dyn_src.get(size)
    if src is None:
        return None
    return _shape_of(g, src[0], [src[1]])


def _factory(g, a, out):
    """zeros/ones/full with a size from a dynamic axis: ConstantOfShape of the run-time sizes."""
    alt = g.cur_alt[0]
    shape = list(out.shape)
    pieces = []
    name = a.get("__name__", "full")
    for s, t in zip(shape, alt):
        r = _runtime_size(g, s) if s != t else None
        if s != t and r is None and name not in g.baked:  # a size computed from an axis (2 * x.shape[0]): kept
            g.baked.append(name)
        pieces.append(s if r is None else r)
    fill = a.get("fill_value", 0 if name == "zeros" else 1)
    value = g.onnx.numpy_helper.from_array(np.asarray([fill], out._dtype.np), "value")
    return g.node("ConstantOfShape", [_pieces(g, pieces)], value=value, hint=name)


def _like(fill):
    """zeros_like/ones_like/full_like of a graph value: ConstantOfShape of its run-time shape."""
    def conv(g, a, out):
        v = a.get("fill_value", fill)
        value = g.onnx.numpy_helper.from_array(np.asarray([v], out._dtype.np), "value")
        return g.node("ConstantOfShape", [g.node("Shape", [g.val(a["input"])])], value=value, hint="like")
    return conv


def _arange(g, a, out):
    """arange whose end is a dynamic axis's size: Range with the run-time limit."""
    start, end, step = a["start"], a.get("end"), a.get("step", 1)
    if end is None:
        start, end = 0, start
    dt = out._dtype
    limit = _runtime_size(g, int(end)) if isinstance(end, int) else None
    if limit is None:
        raise g.unsupported("arange", "its length follows a dynamic axis through a computed size")
    limit = _axes(g, limit, [0], "Squeeze")
    if dt is not dtypes.int64:
        limit = g.node("Cast", [limit], to=_onnx_type(g, dt))
    return g.node("Range", [g.const(np.asarray(start, dt.np)), limit, g.const(np.asarray(step, dt.np))], hint="arange")


LEAF = {
    "arange": _arange, "zeros": lambda g, a, out: _factory(g, {**a, "__name__": "zeros"}, out),
    "ones": lambda g, a, out: _factory(g, {**a, "__name__": "ones"}, out), "full": _factory,
    "zeros_like": _like(0), "ones_like": _like(1), "full_like": _like(None),
    "rnn_stack": _rnn_stack,
    "conv1d": _conv, "conv2d": _conv, "conv3d": _conv, "conv_padded": _conv_padded,
    "conv_transpose1d": _conv_transpose, "conv_transpose2d": _conv_transpose, "conv_transpose3d": _conv_transpose,
    "max_pool1d": _max_pool, "max_pool2d": _max_pool, "max_pool3d": _max_pool,
    "avg_pool1d": _avg_pool, "avg_pool2d": _avg_pool, "avg_pool3d": _avg_pool,
    "adaptive_avg_pool1d": _adaptive("avg"), "adaptive_avg_pool2d": _adaptive("avg"),
    "adaptive_avg_pool3d": _adaptive("avg"), "adaptive_max_pool1d": _adaptive("max"),
    "adaptive_max_pool2d": _adaptive("max"), "adaptive_max_pool3d": _adaptive("max"),
    "batch_norm": _batch_norm, "layer_norm": _layer_norm, "rms_norm": _rms_norm, "group_norm": _group_norm,
    "embedding": _embedding,
    "pad": _pad, "interpolate": _interpolate, "scaled_dot_product_attention": _sdpa,
    "dropout": _dropout, "dropout1d": _dropout, "dropout2d": _dropout, "dropout3d": _dropout,
    "alpha_dropout": _dropout, "feature_alpha_dropout": _dropout, "gelu": _gelu_leaf,
}


def leaf_methods():
    """(class, attribute, LEAF name) of the methods the export wraps."""
    from ..nn.rnn import RNNBase
    return [(RNNBase, "_stack_layers", "rnn_stack")]


def leaf_functions():
    """{name: the function object} for every LEAF name tensorlab defines (nn.functional's bindings)."""
    from ..nn import functional as F
    from ..ops import conv as _conv_ops, creation as _creation
    out = {}
    for name in LEAF:
        fn = getattr(F, name, None) or getattr(_conv_ops, name, None) or getattr(_creation, name, None)
        if fn is not None and callable(fn):
            out[name] = getattr(fn, "__wrapped_by_onnx__", fn)
    return out
