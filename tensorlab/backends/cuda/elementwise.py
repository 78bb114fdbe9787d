"""CUDA elementwise primitives (the names and arguments of backends/cpu/elementwise.py): `unary`,
`binary`, `ternary` run the functor of kernel_table.ELEMENTWISE named by `op` (kernels/elementwise.cu).

Inputs are broadcast here to the output's shape (stride 0), then one kernel runs over out and the
tensor operands: the `*_vec` kernel, whose types are template arguments, when everything is
contiguous, 32-bit indexed, and the output and tensor operands have the dtypes of the op's
instantiation for the compute dtype (kernel_table.elementwise_vec_types: the compute dtype, bool
for predicates' results, where's condition and masked_fill's mask; Python scalars go by value):
x + y, x * 2.0, exp(x), x < y, where(m, x, y) in any one dtype. It moves 16-byte packs when every
pointer is aligned to its pack width, which is checked here on each call (`packs` = 0 otherwise:
the kernel's element loop, still with fixed types). Other layouts (strides, broadcasts) and the mixed
float16/bfloat16-with-float32 operands of the commonest binary ops take the `*_strided` kernel, its
types template arguments as well (kernel_table.elementwise_strided_types), when 32-bit indexed. What
remains (64-bit indexing, rarer dtype mixes, an output dtype of no row) takes the generic kernel, which
reads each operand through its runtime dtype code with one instantiation per (op, compute type).
Integer dtypes all compute in long long and are narrowed to the compute dtype after each load and
before each store (kernels/tensorlab/dtype_code.cuh).

Integer division by zero (div trunc/floor, remainder, fmod) raises RuntimeError("ZeroDivisionError")
before anything is written, as on the CPU (torch raises only on the CPU; on CUDA it returns garbage):
a Python scalar divisor is checked on the host; a tensor divisor by a check kernel whose flag the
host reads back, one named host sync ("integer division by zero check").
"""
from __future__ import annotations

import numpy as np

from ... import _faults, dtypes
from ...device import Device
from ...kernel_table import ELEMENTWISE, ELEMENTWISE_COMPUTE, elementwise_strided_expr, elementwise_strided_types, \
    elementwise_vec_dtypes, elementwise_vec_expr, elementwise_vec_types
from ...layout import Layout, expand_strides
from ...sync import host_wait
from . import complex as _cx
from . import launch as K
from .active import driver
from .driver import Pointer
from .memory import allocate, retire

__all__ = ("unary", "binary", "ternary")  # and generic_kernels(), for tests and benchmarks

_SRC = "elementwise.cu"
_PY = frozenset((bool, int, float))
_CODE = {d: np.int32(i) for i, d in enumerate(dtypes.ALL)}  # tl::DtypeCode
_SCALAR_CODE = np.int32(-1)
# compute dtype -> kernel compute type (C) and the NumPy type of a C argument
_C = {dtypes.bool_: "bool", dtypes.float16: "float", dtypes.bfloat16: "float", dtypes.float32: "float",
      dtypes.float64: "double", **{d: "long long" for d in dtypes.INTEGRAL}}
_C_NP = {"bool": np.bool_, "long long": np.int64, "float": np.float32, "double": np.float64}
_INT_DIVISION = frozenset(("div_trunc", "div_floor", "remainder", "fmod"))
_ZERO = np.zeros(1, np.int32)
_fault_plans = _faults._plans


def _table(prim):
    """kernel name -> (functor, {compute type}, {compute dtype: (*_vec expression, output dtype,
    operand dtypes)}, ((T, *_strided expression, output dtype, operand dtypes), ...)) for one primitive."""
    return {name: (f, {ELEMENTWISE_COMPUTE[k] for k in kinds},
                   {t: (elementwise_vec_expr(prim, name, t), *elementwise_vec_types(prim, name, t))
                    for t in elementwise_vec_dtypes(prim, name)},
                   tuple((t, elementwise_strided_expr(prim, name, t, o, ops), o, ops)
                         for t, o, ops in elementwise_strided_types(prim, name)))
            for name, (f, kinds) in ELEMENTWISE[prim].items()}


_OPS = {prim: _table(prim) for prim in ELEMENTWISE}
_EMPTY = {ix: K.strided_layout((), (), ix) for ix in ("int", "long long")}  # ndim 0: a dense operand
_EXPR = {}


def _expr(prim, op, c, ix):
    """The generic kernel's name expression."""
    key = (prim, op, c, ix)
    e = _EXPR.get(key)
    if e is None:
        functor, kinds = _OPS[prim][op][:2]
        if c not in kinds:
            raise RuntimeError(f"CUDA {prim} kernel {op!r} has no instantiation computing in {c}; it computes in "
                               f"{sorted(kinds)} (kernel_table.ELEMENTWISE)")
        e = _EXPR[key] = f"{prim}_kernel<tl::op::{functor}, {c}, {ix}>"
    return e


def _kernel(prim, op):
    row = _OPS[prim].get(op)
    if row is None:
        raise ValueError(f"{prim}: unknown elementwise kernel {op!r}; the CUDA backend provides "
                         f"{sorted(_OPS[prim])}")
    return row


def _arg(value, compute, c):
    """A number as the kernel's C argument, converted to the compute dtype first (ints wrap)."""
    v = dtypes.wrap_scalar(value, compute.np)
    t = _C_NP[c]
    return v if type(v) is t else t(v)


_ARGS = {}  # (type, int value, compute) -> _arg(...): alpha=1, value=1 and integer operands recur


def _int_arg(value, compute, c):
    """_arg for a Python int or bool (exact keys: 1, True and 1.0 would collide, and -0.0 with 0.0,
    so floats are not cached)."""
    key = (type(value), value, compute)
    r = _ARGS.get(key)
    if r is None:
        r = _arg(value, compute, c)
        if len(_ARGS) >= 4096:
            _ARGS.clear()
        _ARGS[key] = r
    return r


def _operand(x, shape):
    """A tensor (or launch Operand) as a launch operand of the output's shape (broadcast dims get
    stride 0)."""
    if type(x) is _Operand:
        return _expanded(x.buffer, x.layout, x.dtype, shape)
    storage, lay = x._meta
    return _expanded(storage._buf, lay, x._dtype, shape)


def _expanded(buf, lay, dtype, shape):
    if lay.shape != shape and tuple(lay.shape) != tuple(shape):
        lay = Layout(tuple(shape), tuple(expand_strides(lay.shape, lay.stride, shape)), lay.offset)
    return K._operand_of(buf, lay, dtype)


_MASK = [np.int32(m) for m in range(8)]  # which of (up to 3) operands are scalars, as the vec kernels take it
_ZERO_C = {c: t(0) for c, t in _C_NP.items()}  # the scalar slot of a tensor operand


def _run(prim, op, out, operands, compute, scalars_c, params, row=None):
    """Plan out and the tensor operands, pick the instantiation, pack and launch. `operands` are
    tensors or C scalar arguments (already converted); `params` the op's C parameters; `row` the
    op's _kernel row when the caller looked it up already.

    What depends only on the layouts' strides, the dtypes and the kernel (the instantiation, its
    geometry, dtype codes and packed layouts) is a recipe memoized on exactly those; buffers,
    offsets, bounds and devices are read from each operand's one metadata snapshot and checked on
    every call, as K.Plan checks them. Tensors whose Layout records were seen before (the shared
    record of a contiguous shape, ops/_common.interned) find their recipe, driver function and grid
    by the records' identity (_FAST holds the records, so their ids stay theirs while cached)."""
    if type(out) is _Operand:
        return _run_operands(prim, op, out, operands, compute, scalars_c, params, row)
    metas = []
    for x in operands:
        if isinstance(x, np.generic):
            metas.append(None)
        elif type(x) is _Operand:
            return _run_operands(prim, op, K.operand(out), operands, compute, scalars_c, params, row)
        else:
            metas.append(x._meta)
    om = out._meta
    olay = om[1]
    ob = om[0]._buf
    dev = ob.device
    odt = out._dtype
    if len(metas) == 2 and metas[0] is not None and metas[1] is not None:  # two tensors: the key flat
        fkey = (prim, op, compute, scalars_c, K._wide[0], dev, id(olay), odt, id(metas[0][1]), operands[0]._dtype,
                id(metas[1][1]), operands[1]._dtype)
    else:
        fkey = (prim, op, compute, scalars_c, K._wide[0], dev, id(olay), odt,
                *[None if m is None else (id(m[1]), x._dtype) for m, x in zip(metas, operands)])
    hit = _FAST.get(fkey)
    if hit is None:
        shape = olay.shape
        ops = [x if m is None else _expanded(m[0]._buf, m[1], x._dtype, shape) for m, x in zip(metas, operands)]
        r = _recipe_of(prim, op, K._operand_of(ob, olay, odt), ops, compute, scalars_c, row)
        if not r[0]:
            return
        hit = (r, K.function(_SRC, r[1], dev), (K.grid_for(r[0], dev),), (K.BLOCK,), (_SRC, r[1]),
               olay, [None if m is None else m[1] for m in metas])  # the records whose ids are the key
        if len(_FAST) >= 4096:
            _FAST.clear()
        _FAST[fkey] = hit
    n, expr, kind, reaches, codes, zero, mask, lays, count, tail = hit[0]
    isz = odt.itemsize
    if (olay.offset + reaches[0] + 1) * isz > ob.nbytes:
        K.check_bounds(K._operand_of(ob, olay, odt), reaches[0])  # raises
    p_out = _tuple_new(Pointer, (ob, olay.offset * isz))
    ptrs = [p_out] * len(operands)  # a scalar's pointer slot is unused: point it at out
    j = 1
    for k, m in enumerate(metas):
        if m is None:
            continue
        tb = m[0]._buf
        if tb.device != dev:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"cuda:{dev} and cuda:{tb.device}!")
        off = m[1].offset  # a broadcast operand's expanded layout keeps its offset
        isz = operands[k]._dtype.itemsize
        if (off + reaches[j] + 1) * isz > tb.nbytes:
            K.check_bounds(_expanded(tb, m[1], operands[k]._dtype, olay.shape), reaches[j])  # raises
        ptrs[k] = _tuple_new(Pointer, (tb, off * isz))
        j += 1
    if kind is _VEC:
        packs = _packs(tail, p_out, ptrs, metas)
        if j == 3 and len(operands) == 2:  # binary's commonest launch: two tensors, the vectorized kernel
            args = (p_out, ptrs[0], ptrs[1], zero, zero, mask, *params, count, packs)
        else:
            args = _args(prim, p_out, ptrs, operands, zero, kind, mask, params, count, codes, lays, packs)
    else:
        args = _args(prim, p_out, ptrs, operands, zero, kind, mask, params, count, codes, lays)
    K.launch_function(hit[1], hit[4], dev, hit[2], hit[3], args)


def _run2(op, out, a, b, compute, plain):
    """binary's launch without parameters (`plain`: its _PLAIN row) where out is a tensor and a, b
    are tensors or C scalars (not both scalars), from a launch record: everything that depends
    only on the kernel, the dtypes and the layout class (the Layout records, by identity) - the
    instantiation and its driver function, grid, block, dtype codes, packed layouts, reaches, pack
    widths, the constant arguments - worked out once (_record2), so a repeated call only reads
    each operand's one metadata snapshot, checks its bounds and device, makes the pointers, checks
    their pack alignment and calls the driver once. False (nothing done) where the record does not
    apply (a launch Operand, an empty output, another device): the caller takes _run, which raises
    what must be raised."""
    try:
        mo = out._meta
        ma = None if isinstance(a, _generic) else a._meta
        mb = None if isinstance(b, _generic) else b._meta
    except AttributeError:  # a launch Operand
        return False
    lo = mo[1]
    ob = mo[0]._buf
    dev = ob.device
    if ma is None:
        if mb is None:
            return False
        key = (op, compute, K._wide[0], dev, id(lo), out._dtype, None, None, id(mb[1]), b._dtype)
    elif mb is None:
        key = (op, compute, K._wide[0], dev, id(lo), out._dtype, id(ma[1]), a._dtype, None, None)
    else:
        key = (op, compute, K._wide[0], dev, id(lo), out._dtype, id(ma[1]), a._dtype, id(mb[1]), b._dtype)
    rec = _REC2.get(key)
    if rec is None:
        rec = _record2(op, out, a, b, ma, mb, compute, plain, key)
        if rec is None:
            return False
    fn, lkey, grid, block, vec, need, isz, widths, packs, zero, head, tail, _ = rec
    off = lo.offset * isz[0]
    if off + need[0] > ob.nbytes:
        return False
    po = _tuple_new(Pointer, (ob, off))
    align = (ob.ptr + off) % widths[0] if vec else 0
    if ma is None:
        pa, sa = po, a
    else:
        buf = ma[0]._buf
        off = ma[1].offset * isz[1]
        if buf.device != dev or off + need[1] > buf.nbytes:
            return False
        pa = _tuple_new(Pointer, (buf, off))
        sa = zero
        if vec:
            align = align or (buf.ptr + off) % widths[1]
    if mb is None:
        pb, sb = po, b
    else:
        buf = mb[0]._buf
        off = mb[1].offset * isz[2]
        if buf.device != dev or off + need[2] > buf.nbytes:
            return False
        pb = _tuple_new(Pointer, (buf, off))
        sb = zero
        if vec:
            align = align or (buf.ptr + off) % widths[2]
    if vec:  # binary_vec(out, a, b, scalar a, scalar b, mask, alpha, count, packs)
        args = (po, pa, pb, sa, sb, *tail, _NO_PACKS if align else packs)
    else:  # binary_strided / binary_kernel (head: the generic kernel's dtype codes, () for the typed one)
        args = (po, pa, pb, *head, sa, sb, *tail)
    if _fault_plans:  # K.run(rec, args), inlined
        _faults.hit("launch")
    stream = driver.current_stream(dev)
    driver.launch(fn, grid, block, args, 0, stream)
    if _faults.observers:
        _faults.launched(dev, stream)
    K.LAUNCHES[lkey] = K.LAUNCHES.get(lkey, 0) + 1
    return True


def _record2(op, out, a, b, ma, mb, compute, plain, key):
    """_run2's launch record for these operands (remembered under `key`), or None where it does not
    apply. The recipe (_recipe_of) checks the shapes, bounds and devices of this first call."""
    mo = out._meta
    lo = mo[1]
    ob = mo[0]._buf
    dev = ob.device
    shape = lo.shape
    for buf in (None if ma is None else ma[0]._buf, None if mb is None else mb[0]._buf):
        if buf is not None and buf.device != dev:
            return None
    ops = [a if ma is None else _expanded(ma[0]._buf, ma[1], a._dtype, shape),
           b if mb is None else _expanded(mb[0]._buf, mb[1], b._dtype, shape)]
    r = _recipe_of("binary", op, K._operand_of(ob, lo, out._dtype), ops, compute, plain[0], plain[2])
    n, expr, kind, reaches, codes, zero, mask, lays, count, tail = r
    if not n:
        return None
    vec = kind is _VEC
    sizes = [out._dtype.itemsize, None if ma is None else a._dtype.itemsize, None if mb is None else b._dtype.itemsize]
    need, isz, widths = [0, 0, 0], [0, 0, 0], [0, 0, 0]
    j = 0
    for k in range(3):
        if sizes[k] is None:
            continue
        isz[k] = sizes[k]
        need[k] = (reaches[j] + 1) * sizes[k]  # bytes from the operand's first element to past its last
        if vec:
            widths[k] = tail[1][j]
        j += 1
    alpha = plain[1][0]
    if vec:  # binary_vec(out, a, b, scalar a, scalar b, mask, alpha, count, packs)
        packs, head, rest = tail[0], (), (mask, alpha, count)
    elif kind is _STRIDED:  # binary_strided(out, a, b, scalar a, scalar b, mask, alpha, count, layouts...)
        packs, head, rest = None, (), (mask, alpha, count, *lays)
    else:  # binary_kernel(out, a, b, dtype codes..., scalar a, scalar b, alpha, count, layouts...)
        packs, head, rest = None, codes, (alpha, count, *lays)
    rec = (K.function(_SRC, expr, dev), (_SRC, expr), (K.grid_for(n, dev),), (K.BLOCK,), vec, tuple(need), tuple(isz),
           tuple(widths), packs, zero, head, rest,
           (lo, None if ma is None else ma[1], None if mb is None else mb[1]))  # the records whose ids are the key
    if len(_REC2) >= 4096:
        _REC2.clear()
    _REC2[key] = rec
    return rec


_REC2 = {}  # _run2's key -> launch record (see _record2)
_generic = np.generic


def _packs(tail, p_out, ptrs, metas):
    """The *_vec kernel's `packs`: n // lanes when out and every tensor operand's address is a
    multiple of its pack width (pack.cuh), else 0 (the kernel's element loop does everything)."""
    packs, widths = tail
    b = p_out.buffer
    if (b.ptr + p_out.offset) % widths[0]:
        return _NO_PACKS
    j = 1
    for k, m in enumerate(metas):
        if m is not None:
            p = ptrs[k]
            if (p.buffer.ptr + p.offset) % widths[j]:
                return _NO_PACKS
            j += 1
    return packs


_NO_PACKS = np.int32(0)


_VEC, _STRIDED, _GENERIC = "vec", "strided", "generic"  # the recipe's kernel kind


def _args(prim, p_out, ptrs, operands, zero, kind, mask, params, count, codes, lays, packs=None):
    scal = [x if isinstance(x, np.generic) else zero for x in operands]
    if kind is _VEC:
        if prim == "unary":
            return (p_out, ptrs[0], *params, count, packs)
        return (p_out, *ptrs, *scal, mask, *params, count, packs)
    if kind is _STRIDED:
        if prim == "unary":
            return (p_out, ptrs[0], *params, count, *lays)
        return (p_out, *ptrs, *scal, mask, *params, count, *lays)
    if prim == "unary":
        return (p_out, ptrs[0], *codes, *params, count, *lays)
    return (p_out, *ptrs, *codes, *scal, *params, count, *lays)


def _recipe_of(prim, op, o, operands, compute, scalars_c, row):
    """_recipe's answer for out `o` and `operands` (launch Operands of out's shape, or C scalars),
    memoized on the strides, dtypes and kernel."""
    olay = o.layout
    key = [prim, op, compute, scalars_c, K._wide[0], olay.shape, olay.stride, o.dtype]
    tensors = []  # (position in operands, launch operand)
    for k, x in enumerate(operands):
        if isinstance(x, np.generic):
            key.append(None)
        else:
            tensors.append((k, x))
            key.append(x.layout.stride)
            key.append(x.dtype)
    try:
        key = tuple(key)
        r = _RECIPES.get(key)
    except TypeError:  # a layout of lists
        key = r = None
    if r is None:
        r = _recipe(prim, op, o, tensors, operands, compute, scalars_c, row)
        if key is not None:
            if len(_RECIPES) >= 4096:
                _RECIPES.clear()
            _RECIPES[key] = r
    return r


def _run_operands(prim, op, o, operands, compute, scalars_c, params, row):
    """_run where out (`o`) or an operand is a launch Operand, not a tensor."""
    shape = o.layout.shape
    ops = [x if isinstance(x, np.generic) else _operand(x, shape) for x in operands]
    r = _recipe_of(prim, op, o, ops, compute, scalars_c, row)
    n, expr, kind, reaches, codes, zero, mask, lays, count, tail = r
    if not n:
        return
    buf = o.buffer
    dev = buf.device
    reach = reaches[0]
    isz = o.dtype.itemsize
    if (o.layout.offset + reach + 1) * isz > buf.nbytes:
        K.check_bounds(o, reach)  # raises
    p_out = _tuple_new(Pointer, (buf, o.layout.offset * isz))
    ptrs = [p_out] * len(operands)
    j = 1
    for k, t in enumerate(ops):
        if isinstance(t, np.generic):
            continue
        tb = t.buffer
        if tb.device != dev:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"cuda:{dev} and cuda:{tb.device}!")
        reach = reaches[j]
        isz = t.dtype.itemsize
        if (t.layout.offset + reach + 1) * isz > tb.nbytes:
            K.check_bounds(t, reach)  # raises
        ptrs[k] = _tuple_new(Pointer, (tb, t.layout.offset * isz))
        j += 1
    packs = (_packs(tail, p_out, ptrs, [None if isinstance(x, np.generic) else x for x in ops]) if kind is _VEC
             else None)
    K.launch(_SRC, expr, dev, _args(prim, p_out, ptrs, operands, zero, kind, mask, params, count, codes, lays, packs),
             n=n)


_FAST = {}  # _run's identity key -> (recipe, driver function, grid, block, launch key, the Layouts keyed by id)
_Operand = K.Operand
_RECIPES = {}  # _run's key -> _recipe's answer (immutable)
_tuple_new = tuple.__new__


def _recipe(prim, op, o, tensors, operands, compute, scalars_c, row):
    """(n, name expression, kernel kind (_VEC, _STRIDED, _GENERIC), reach per planned operand (out
    first), dtype codes (out, each operand, compute; the generic kernel's), zero scalar for a tensor's
    scalar slot, scalar mask (the typed kernels'), packed layouts (the strided and generic kernels'),
    count, vec's (packs when aligned, pack width in bytes per planned operand) or None): what _run
    launches with besides pointers, scalars and params. K.Plan checks the
    shapes, bounds and devices of this first call."""
    if row is None:
        row = _kernel(prim, op)
    c = _C[compute]
    p = K.Plan([o] + [t for _, t in tensors])
    if not p.n:
        return (0, None, _GENERIC, (), (), None, None, (), None, None)
    ix = p.index
    codes = [_SCALAR_CODE] * len(operands)
    odt = o.dtype
    vec = _vec_row(row, compute, c, odt, tensors) if p.contiguous and ix == "int" else None
    for k, t in tensors:
        codes[k] = _CODE[t.dtype]
    zero = _ZERO_C[c] if scalars_c is _C_NP[c] else scalars_c(0)
    reaches = []
    for op_ in p.operands:
        r = 0
        for n, st in zip(op_.layout.shape, op_.layout.stride):
            r += (n - 1) * st
        reaches.append(r)
    if vec is not None:
        mask = 0
        for k, x in enumerate(operands):
            if isinstance(x, np.generic):
                mask |= 1 << k
        sizes = [odt.itemsize] + [t.dtype.itemsize for _, t in tensors]
        lanes = 16 // max([odt.itemsize] + [d.itemsize for d in vec[2]])  # tl::lanes of the kernel's types
        tail = (np.int32(p.n // lanes), tuple(lanes * s for s in sizes))
        return (p.n, vec[0], _VEC, tuple(reaches), (), zero, _MASK[mask], (), p.count, tail)
    empty = _EMPTY[ix]
    if p.contiguous:
        lays = [empty] * (len(operands) + 1)
    else:
        p_lays = p.layouts
        lays = [p_lays[0]] + [empty] * len(operands)
        for j, (k, _) in enumerate(tensors):
            lays[k + 1] = p_lays[j + 1]
    typed = _strided_row(row, compute, c, odt, tensors) if ix == "int" and not _generic_only[0] else None
    if typed is not None:
        mask = 0
        for k, x in enumerate(operands):
            if isinstance(x, np.generic):
                mask |= 1 << k
        return (p.n, typed, _STRIDED, tuple(reaches), (), zero, _MASK[mask], tuple(lays), p.count, None)
    expr = _EXPR.get((prim, op, c, ix)) or _expr(prim, op, c, ix)
    cc = _CODE[compute]
    if prim == "unary":
        all_codes = (_CODE[odt], codes[0], cc)
    else:
        all_codes = (_CODE[odt], *codes, cc)
    return (p.n, expr, _GENERIC, tuple(reaches), all_codes, zero, None, tuple(lays), p.count, None)


def _vec_row(row, compute, c, odt, tensors):
    """(expression, out dtype, operand dtypes) of the *_vec instantiation that computes exactly what
    the generic kernel would, or None. Its storage type T is the output's dtype (a predicate's: its
    first tensor operand's); float16/bfloat16 tensors under a float32 compute dtype (torch's upcast)
    take T's row, which computes in float as well. Integer and bool T must be the compute dtype
    itself: the generic kernel narrows every load to it."""
    vecs = row[2]
    t = odt
    if odt is dtypes.bool_ and compute is not dtypes.bool_:
        t = None
        for _, x in tensors:
            if x.dtype is not dtypes.bool_:
                t = x.dtype
                break
        if t is None:
            t = compute
    v = vecs.get(t)
    if v is None or v[1] is not odt or (t is not compute and (not t.is_floating_point or _C[t] != c)):
        return None
    for k, x in tensors:
        if x.dtype is not v[2][k]:
            return None
    return v


_generic_only = [False]


class generic_kernels:
    """Within this context every launch that would take a *_strided kernel takes the generic *_kernel
    (the runtime dtype codes) instead: tests reach the generic kernels' 32-bit instantiations with it,
    and the benchmark compares the two. Process-wide (not per thread): it clears the memoized recipes
    on entry and exit, so use it where no other thread launches elementwise kernels."""

    def __enter__(self):
        self._was = _generic_only[0]
        _generic_only[0] = True
        self._clear()
        return self

    def __exit__(self, *exc):
        _generic_only[0] = self._was
        self._clear()
        return False

    @staticmethod
    def _clear():  # every memo of a kernel choice: recipes and the launch records built from them
        _FAST.clear()
        _RECIPES.clear()
        _REC1.clear()
        _REC2.clear()


def _strided_row(row, compute, c, odt, tensors):
    """The *_strided expression whose types are exactly out's and the tensor operands' (a scalar's
    position takes any) and whose storage type T computes what the generic kernel would: T the
    compute dtype, or a floating T computing in the same C type (float16/bfloat16/float32 tensors
    under a float32 or 16-bit compute dtype all compute in float); integer and bool T must be the
    compute dtype itself (the generic kernel narrows every load to it). None when no row fits."""
    for t, expr, o, ops in row[3]:
        if o is not odt or (t is not compute and (not t.is_floating_point or _C[t] != c)):
            continue
        for k, x in tensors:
            if x.dtype is not ops[k]:
                break
        else:
            return expr
    return None


def _c_arg(v, compute, c):
    """_arg, memoized for Python ints and bools."""
    t = type(v)
    return _int_arg(v, compute, c) if t is int or t is bool else _arg(v, compute, c)


def _params(compute, c, values):
    return tuple([_c_arg(v, compute, c) for v in values])


def _unary_params(op, params):
    """round: (10**|decimals|, sign of decimals); nan_to_num: (nan, posinf, neginf); gelu: (tanh?)."""
    if not params:
        return (0, 0, 0)
    if op == "round" and set(params) <= {"decimals"}:
        d = int(params.get("decimals", 0))
        return (10.0 ** abs(d), (d > 0) - (d < 0), 0)
    if op == "nan_to_num" and set(params) <= {"nan", "posinf", "neginf"}:
        return (params.get("nan", 0.0), params.get("posinf", 0.0), params.get("neginf", 0.0))
    if op == "gelu" and set(params) <= {"approximate"}:
        return (1 if params.get("approximate", "none") == "tanh" else 0, 0, 0)
    raise TypeError(f"unary {op!r}: unexpected parameters {sorted(params)}")


def _one_param(prim, op, params, name):
    if not params:
        return 1
    if set(params) != {name}:
        raise TypeError(f"{prim} {op!r}: unexpected parameters {sorted(params)}")
    return params[name]


def _c_scalar(x, compute, c):
    t = type(x)
    if t is float:
        return _arg(x, compute, c)
    return _int_arg(x, compute, c) if t is int or t is bool else x


def unary(out, op, x, compute, **params):
    """out = op(x), computed in `compute`."""
    if compute.category == 3:  # complex: kernels/complex.cu (complex.py)
        return _cx.unary(out, op, x, compute, **params)
    if not params and _run1(op, out, x, compute):
        return
    c = _C[compute]
    row = _kernel("unary", op)
    _run("unary", op, out, (x,), compute, _C_NP[c], _params(compute, c, _unary_params(op, params)), row)


def _run1(op, out, x, compute):
    """unary's launch without parameters from a launch record, as _run2 launches binary's: False
    (nothing done) where the record does not apply."""
    try:
        mo = out._meta
        mx = x._meta
    except AttributeError:  # a launch Operand
        return False
    lo, lx = mo[1], mx[1]
    ob, xb = mo[0]._buf, mx[0]._buf
    dev = ob.device
    key = (op, compute, K._wide[0], dev, id(lo), out._dtype, id(lx), x._dtype)
    rec = _REC1.get(key)
    if rec is None:
        rec = _record1(op, out, x, compute, key)
        if rec is None:
            return False
    fn, lkey, grid, block, vec, need_o, need_x, isz_o, isz_x, w_o, w_x, packs, head, tail, _ = rec
    o_off = lo.offset * isz_o
    x_off = lx.offset * isz_x
    if xb.device != dev or o_off + need_o > ob.nbytes or x_off + need_x > xb.nbytes:
        return False
    po = _tuple_new(Pointer, (ob, o_off))
    px = _tuple_new(Pointer, (xb, x_off))
    if vec:  # unary_vec(out, x, params..., count, packs)
        args = (po, px, *tail, _NO_PACKS if (ob.ptr + o_off) % w_o or (xb.ptr + x_off) % w_x else packs)
    else:  # unary_strided / unary_kernel (head: the generic kernel's dtype codes, () for the typed one)
        args = (po, px, *head, *tail)
    K.launch_function(fn, lkey, dev, grid, block, args)
    return True


def _record1(op, out, x, compute, key):
    """_run1's launch record (remembered under `key`), or None where it does not apply."""
    mo, mx = out._meta, x._meta
    lo, lx = mo[1], mx[1]
    ob, xb = mo[0]._buf, mx[0]._buf
    dev = ob.device
    if xb.device != dev:
        return None
    c = _C[compute]
    row = _kernel("unary", op)
    params = _params(compute, c, _unary_params(op, {}))
    r = _recipe_of("unary", op, K._operand_of(ob, lo, out._dtype), [_expanded(xb, lx, x._dtype, lo.shape)], compute,
                   _C_NP[c], row)
    n, expr, kind, reaches, codes, zero, mask, lays, count, tail = r
    if not n:
        return None
    vec = kind is _VEC
    isz_o, isz_x = out._dtype.itemsize, x._dtype.itemsize
    if vec:
        packs, (w_o, w_x), head, rest = tail[0], tail[1], (), (*params, count)
    else:  # unary_strided(out, x, params..., count, layouts...) / unary_kernel(out, x, codes..., params..., ...)
        packs, w_o, w_x, head, rest = None, 0, 0, (() if kind is _STRIDED else codes), (*params, count, *lays)
    rec = (K.function(_SRC, expr, dev), (_SRC, expr), (K.grid_for(n, dev),), (K.BLOCK,), vec,
           (reaches[0] + 1) * isz_o, (reaches[1] + 1) * isz_x, isz_o, isz_x, w_o, w_x, packs, head, rest,
           (lo, lx))  # the records whose ids are the key
    if len(_REC1) >= 4096:
        _REC1.clear()
    _REC1[key] = rec
    return rec


_REC1 = {}  # _run1's key -> launch record


def binary(out, op, a, b, compute, **params):
    """out = op(a, b); `a`/`b` are tensors or Python numbers (converted to `compute` here)."""
    if compute.category == 3:  # complex: kernels/complex.cu (complex.py)
        return _cx.binary(out, op, a, b, compute, **params)
    if not params:  # no parameters: the op's constants in one lookup, then its launch record (_run2)
        hit = _PLAIN.get((op, compute))
        if hit is not None:
            ta, tb = type(a), type(b)
            if ta in _PY:
                a = _arg(a, compute, hit[3]) if ta is float else _int_arg(a, compute, hit[3])
            if tb in _PY:
                b = _arg(b, compute, hit[3]) if tb is float else _int_arg(b, compute, hit[3])
            if not _run2(op, out, a, b, compute, hit):
                _run("binary", op, out, (a, b), compute, hit[0], hit[1], hit[2])
            return
    c = _C[compute]
    row = _kernel("binary", op)
    if op == "gelu_backward":  # p0: the tanh approximation
        if set(params) - {"approximate"}:
            raise TypeError(f"binary {op!r}: unexpected parameters {sorted(params)}")
        alpha = 1 if params.get("approximate", "none") == "tanh" else 0
    elif params:
        alpha = _one_param("binary", op, params, "alpha") if op in ("add", "sub") else _no_params(op, params)
    else:
        alpha = 1
    sa, sb = _c_scalar(a, compute, c), _c_scalar(b, compute, c)
    # an empty result divides nothing: torch raises only when an element is divided
    if op in _INT_DIVISION and c == "long long" and K.plan(out).n and _divides_by_zero(out, a, b, sb, compute):
        raise RuntimeError("ZeroDivisionError")  # torch's exact text for integer division by zero
    args = (_c_arg(alpha, compute, c),)
    if not params and op not in _INT_DIVISION and op != "gelu_backward":
        if len(_PLAIN) >= 4096:
            _PLAIN.clear()
        _PLAIN[(op, compute)] = (_C_NP[c], args, row, c)
    _run("binary", op, out, (sa, sb), compute, _C_NP[c], args, row)


_PLAIN = {}  # (op, compute dtype) -> binary's (C scalar type, parameters, kernel row, C type) without parameters


def ternary(out, op, a, b, c, compute, **params):
    """out = op(a, b, c); operands as for `binary`, and None for an absent clamp bound."""
    if compute.category == 3:  # complex: real kernels over the parts, or complex binary steps (complex.py)
        return _cx.ternary(out, op, a, b, c, compute, ternary, **params)
    ct = _C[compute]
    row = _kernel("ternary", op)
    value = _one_param("ternary", op, params, "value") if op in ("addcmul", "addcdiv") else _no_params(op, params)
    ops = [_c_scalar(x, compute, ct) for x in (a, b, c)]
    if op == "clamp":  # an absent bound is the identity of max/min
        for k, ident in ((1, _lowest), (2, _highest)):
            if ops[k] is None:
                ops[k] = ident(ct)
    if any(x is None for x in ops):
        raise TypeError(f"ternary {op!r}: an operand is None")
    _run("ternary", op, out, tuple(ops), compute, _C_NP[ct], (_c_arg(value, compute, ct),), row)


def _no_params(op, params):
    if params:
        raise TypeError(f"{op!r}: unexpected parameters {sorted(params)}")
    return 1


def _lowest(c):
    return _C_NP[c](-np.inf) if c in ("float", "double") else np.int64(np.iinfo(np.int64).min)


def _highest(c):
    return _C_NP[c](np.inf) if c in ("float", "double") else np.int64(np.iinfo(np.int64).max)


# -- integer division by zero ------------------------------------------------------------------

def _divides_by_zero(out, a, b, sb, compute):
    """Whether an element of b is a zero divisor: a named host wait. (Not a device-side check: the
    backend cannot tell a fresh result from an out= or in-place target, which a failure must leave
    unwritten; the kernels give 0 for a zero divisor rather than trap, for the CPU emulation.)"""
    if isinstance(sb, np.generic):
        return sb == 0
    p = K.plan(b)
    if not p.n:
        return False
    dev = p.device
    where = Device("cuda", dev)
    flag = allocate(4, where)
    try:
        stream = driver.current_stream(dev)
        driver.memcpy_htod(Pointer(flag), _ZERO, 4, stream, False)
        lay = _EMPTY[p.index] if p.contiguous else p.layouts[0]
        K.launch(_SRC, f"any_zero_divisor<{p.index}>", dev,
                 (Pointer(flag), p.ptrs[0], _CODE[b._dtype], _CODE[compute], p.count, lay), n=p.n)
        host_wait("integer division by zero check", where)
        seen = np.zeros(1, np.int32)
        driver.memcpy_dtoh(seen, Pointer(flag), 4, stream, False)
    finally:
        retire(flag)
    return bool(seen[0])


unary.kernels = frozenset(ELEMENTWISE["unary"])
binary.kernels = frozenset(ELEMENTWISE["binary"])
ternary.kernels = frozenset(ELEMENTWISE["ternary"])
