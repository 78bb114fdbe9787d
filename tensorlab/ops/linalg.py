"""Matrix products: matmul (and @) with torch's broadcasting and 1-D rules, mm, bmm, mv, dot,
outer/ger. Every one views its operands as already-broadcast batched matrices and calls the one
`matmul` primitive."""
from __future__ import annotations

from .. import autograd_hooks, dtypes, layout as L
from ..tensor import Tensor
from ..sparse._tensor import SparseTensor as _Sparse
from . import registry
from ._common import output, same_device
from .reduction import C_NAMES, check_out_dtype, check_tensor, refuse_out_grad
from .registry import DEFAULT, KEEP, OpDef

_F = "linalg"
registry.register(
    OpDef("matmul", _F, "matmul", KEEP, info={"same_dtype": True}),
    OpDef("mm", _F, "matmul", KEEP, info={"same_dtype": True}),
    OpDef("bmm", _F, "matmul", KEEP, info={"same_dtype": True}),
    OpDef("mv", _F, "matmul", KEEP, info={"same_dtype": True}),
    OpDef("dot", _F, "matmul", KEEP, info={"same_dtype": True}),
    OpDef("outer", _F, "matmul", DEFAULT),
)


_KEEP_DIMS = (False, False)


def _restride(t, shape, stride):
    meta = t._meta
    return t._view_of(L.Layout(L.Size(shape), tuple(stride), meta.layout.offset), meta=meta)


def _same_dtype(a, b):
    if a._dtype is not b._dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {C_NAMES[a._dtype.name]} != "
                           f"{C_NAMES[b._dtype.name]}")


# torch has no bool products and names the ATen kernel that refused, as NotImplementedError
_BOOL_KERNEL = {"mm": "addmm_impl_cpu_", "bmm": "bmm", "mv": "addmv_impl_cpu", "dot": "dot"}


def _no_bool(t, op):
    if t._dtype is dtypes.bool_:
        raise NotImplementedError(f'"{_BOOL_KERNEL[op]}" not implemented for \'Bool\' ({op} has no bool '
                                  f"kernel, as in torch; convert first, e.g. .to(tensorlab.int64))")


def _matmul_kernel(a, b):
    """The product torch's matmul folds its operands into, which names its bool error."""
    if b.dim() == 1:
        return "dot" if a.dim() == 1 else "mv"
    return "mm" if b.dim() == 2 else "bmm"


def _mm_error(n, k, k2, m):
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")


def _product(op, inputs, a3, b3, drop, dtype, out):
    """Write the batched product a3 @ b3 (already-broadcast (..., n, k) and (..., k, m) views)
    into a new or out= result: the batch dims, then n and m unless `drop` removes them (the
    dims matmul adds to 1-D operands)."""
    sa, sb = a3._meta.layout.shape, b3._meta.layout.shape
    shape = tuple(sa[:-2]) + (() if drop[0] else (sa[-2],)) + (() if drop[1] else (sb[-1],))
    dev = same_device(op, a3, b3)
    o = output(out, shape, dtype, dev, op, inputs)
    res = o.tensor
    if drop != _KEEP_DIMS:  # the result seen as (..., n, m): a removed n or m dim is size 1, stride 0
        lay = res._meta.layout
        nb = a3.dim() - 2
        rshape, rstride = list(lay.shape[:nb]), list(lay.stride[:nb])
        rest = iter(zip(lay.shape[nb:], lay.stride[nb:]))
        for removed in drop:
            s, st = (1, 0) if removed else next(rest)
            rshape.append(s)
            rstride.append(st)
        res = _restride(res, rshape, rstride)
    a3._backend.matmul(res, a3, b3)
    return autograd_hooks.record(o.finish(), op, inputs)


def _as_matrices(a, b):
    """(a3, b3, dropped dims) for matmul: 1-D a is a row (1, k), 1-D b a column (k, 1); batch
    dims broadcast."""
    la, lb = a._meta.layout, b._meta.layout
    if a.dim() == 1:
        ash, ast = (1, la.shape[0]), (0, la.stride[0])
    else:
        ash, ast = tuple(la.shape), tuple(la.stride)
    if b.dim() == 1:
        bsh, bst = (lb.shape[0], 1), (lb.stride[0], 0)
    else:
        bsh, bst = tuple(lb.shape), tuple(lb.stride)
    batch = tuple(L.broadcast_shapes(ash[:-2], bsh[:-2]))
    n, k = ash[-2:]
    k2, m = bsh[-2:]
    if k != k2:
        if a.dim() == 1 and b.dim() == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{k}] and src [{k2}] to have the same "
                               f"number of elements, but got {k} and {k2} elements respectively")
        if b.dim() == 1 and a.dim() == 2:
            raise RuntimeError(f"size mismatch, got input ({n}), mat ({n}x{k}), vec ({k2})")
        if not batch:
            raise _mm_error(n, k, k2, m)
        nb = L.prod(batch)
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{nb}, {k}] but got: "
                           f"[{nb}, {k2}].")
    a3 = a if ash[:-2] == batch and a.dim() > 1 else _restride(a, batch + (n, k),
                                                                L.expand_strides(ash, ast, batch + (n, k)))
    b3 = b if bsh[:-2] == batch and b.dim() > 1 else _restride(b, batch + (k, m),
                                                                L.expand_strides(bsh, bst, batch + (k, m)))
    return a3, b3, (a.dim() == 1, b.dim() == 1)


def _sparse_product(op, a, b, out):
    from ..sparse import _ops
    r = _ops.matmul(a, b) if op == "matmul" else _ops.mm(a, b)
    if out is None:
        return r
    if isinstance(r, _Sparse):
        raise RuntimeError(f"{op}: out= with a sparse result is not supported; call without out=")
    out.resize_(r.shape)
    return out.copy_(r)


def matmul(input, other, *, out=None):
    """torch.matmul: 1-D x 1-D is a dot product (0-dim), a 1-D operand gains a dim that is
    removed from the result, batch dims broadcast."""
    if input.__class__ is _Sparse or other.__class__ is _Sparse:  # a sparse operand: tensorlab/sparse
        return _sparse_product("matmul", input, other, out)
    refuse_out_grad("matmul", out, input, other)
    a = check_tensor(input, "matmul")
    b = check_tensor(other, "matmul", "other", 2)
    if a.dim() == 0 or b.dim() == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.dim()}D and "
                           f"{b.dim()}D")
    _same_dtype(a, b)
    _no_bool(a, _matmul_kernel(a, b))
    check_out_dtype(out, a._dtype)
    return _product("matmul", (input, other), *_as_matrices(a, b), a._dtype, out)


def mm(input, mat2, *, out=None):
    if input.__class__ is _Sparse or mat2.__class__ is _Sparse:
        return _sparse_product("mm", input, mat2, out)
    refuse_out_grad("mm", out, input, mat2)
    a = check_tensor(input, "mm")
    b = check_tensor(mat2, "mm", "mat2", 2)
    if a.dim() != 2:
        raise RuntimeError(f"self must be a matrix (mm takes 2-D tensors; got {a.dim()}-D, use matmul to "
                           f"broadcast)")
    if b.dim() != 2:
        raise RuntimeError(f"mat2 must be a matrix (mm takes 2-D tensors; got {b.dim()}-D, use matmul to "
                           f"broadcast)")
    _same_dtype(a, b)
    _no_bool(a, "mm")
    check_out_dtype(out, a._dtype)
    (n, k), (k2, m) = a.shape, b.shape
    if k != k2:
        raise _mm_error(n, k, k2, m)
    return _product("mm", (input, mat2), a, b, _KEEP_DIMS, a._dtype, out)


def bmm(input, mat2, *, out=None):
    refuse_out_grad("bmm", out, input, mat2)
    a = check_tensor(input, "bmm")
    b = check_tensor(mat2, "bmm", "mat2", 2)
    if a.dim() != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor, got {a.dim()}D")
    if b.dim() != 3:
        raise RuntimeError(f"batch2 must be a 3D tensor, got {b.dim()}D")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"expected scalar type {a._dtype.torch_name} but found {b._dtype.torch_name}")
    _no_bool(a, "bmm")
    check_out_dtype(out, a._dtype)
    (bs, _, k), (bs2, k2, _) = a.shape, b.shape
    if (bs2, k2) != (bs, k):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{bs}, {k}] but got: "
                           f"[{bs2}, {k2}].")
    return _product("bmm", (input, mat2), a, b, _KEEP_DIMS, a._dtype, out)


def mv(input, vec, *, out=None):
    refuse_out_grad("mv", out, input, vec)
    a = check_tensor(input, "mv")
    v = check_tensor(vec, "mv", "vec", 2)
    if a.dim() != 2 or v.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.dim()}, {v.dim()}")
    _same_dtype(a, v)
    _no_bool(a, "mv")
    check_out_dtype(out, a._dtype)
    return _product("mv", (input, vec), *_as_matrices(a, v), a._dtype, out)


def dot(input, tensor, *, out=None):
    """torch.dot(input, tensor): the inner product of two 1-D tensors (torch's keyword names)."""
    other = tensor
    refuse_out_grad("dot", out, input, other)
    a = check_tensor(input, "dot")
    b = check_tensor(other, "dot", "tensor", 2)
    if a.dim() != 1 or b.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {a._dtype.torch_name} and "
                           f"{b._dtype.torch_name}")
    _no_bool(a, "dot")
    if isinstance(out, Tensor) and out._dtype is not a._dtype:
        raise RuntimeError(f"result dtype {out._dtype.torch_name} does not match input dtype "
                           f"{a._dtype.torch_name}")
    return _product("dot", (input, other), *_as_matrices(a, b), a._dtype, out)


def outer(input, vec2, *, out=None):
    """input[i] * vec2[j], promoted as a multiplication (a k=1 matrix product)."""
    refuse_out_grad("mul", out, input, vec2)  # torch computes outer as a broadcast mul
    a = check_tensor(input, "outer")
    b = check_tensor(vec2, "outer", "vec2", 2)
    for t, name in ((a, "self"), (b, "vec2")):
        if t.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.dim()}-D")
    dt = dtypes.promote_types(a._dtype, b._dtype)
    ca, cb = a.to(dt), b.to(dt)
    (n,), (m,) = a.shape, b.shape
    a3 = _restride(ca, (n, 1), (ca.stride(0), 0))
    b3 = _restride(cb, (1, m), (0, cb.stride(0)))
    return _product("outer", (input, vec2), a3, b3, _KEEP_DIMS, dt, out)


def __matmul__(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(self, other)


def __rmatmul__(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, self)


ger = outer
FUNCTIONS = ("matmul", "mm", "bmm", "mv", "dot", "outer", "ger")
METHODS = {"matmul": matmul, "mm": mm, "bmm": bmm, "mv": mv, "dot": dot, "outer": outer, "ger": ger,
           "__matmul__": __matmul__, "__rmatmul__": __rmatmul__}
