"""ONNX mappings of the shape and view ops (HOOK rows): reshape/view/flatten, squeeze/unsqueeze, expand,
permute/transpose, narrow/select/getitem/index, index_select, cat/stack, flip, roll, tril/triu, gather, topk/sort."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from ._trace import INT64_MAX
from ._symbolic_common import _as, _axes, _norm_dim


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


# the HOOK rows of this family (op name -> mapping), merged into _symbolic.HOOK
HOOK = {
    "topk": _topk, "sort": _topk, "flip": _flip, "tril": _trilu, "triu": _trilu, "gather": _gather, "roll": _roll,
    "view": _reshape, "reshape": _reshape, "_unsafe_view": _reshape, "flatten": _reshape, "unflatten": _reshape,
    "view_as": _reshape, "reshape_as": _reshape, "unsqueeze": _unsqueeze, "squeeze": _squeeze, "expand": _expand,
    "expand_as": _expand, "permute": _permute, "transpose": _transpose, "t": _transpose, "narrow": _narrow,
    "split": _narrow, "slice": _narrow, "select": _select, "getitem": _getitem, "index": _index,
    "index_select": _index_select, "take_rows": _take_rows, "cat": _cat, "concat": _cat, "stack": _cat,
}
