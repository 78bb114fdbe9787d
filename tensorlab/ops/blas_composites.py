"""BLAS-shaped composites: addmm, addmv, addr, baddbmm, addbmm (beta * input + alpha * product) with
their methods and in-place forms, over matmul (so CUDA float products go to cuBLAS) and autograd.
torch's rule that beta = 0 ignores input (its NaN and inf included) is kept."""
from __future__ import annotations

from .. import dtypes
from ..tensor import Tensor
from ._common import check_cast
from ._composite import overwrite


def _tensor(x, op, name, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


def _scalars(op, dt, beta, alpha):
    if not dt.is_floating_point:
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, float) and not float(v).is_integer():
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")
    return beta, alpha


def _combine(op, input, product, beta, alpha, out):
    from ..layout import broadcast_shapes
    beta, alpha = _scalars(op, product.dtype, beta, alpha)
    try:
        shape = broadcast_shapes(tuple(input.shape), tuple(product.shape))
    except RuntimeError:
        shape = None
    if shape != tuple(product.shape):
        raise RuntimeError(f"{op}: the input of shape {list(input.shape)} does not broadcast to the product's shape "
                           f"{list(product.shape)}")
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:  # input ignored, its NaN and inf included
        r = scaled if scaled is not product else product.clone()
    else:
        r = (input if beta == 1 else input * beta) + scaled
    if r.dtype is not product.dtype:
        r = r.to(product.dtype)
    if out is not None:
        check_cast(r.dtype, out.dtype, op)
        out.resize_(r.shape)
        return out.copy_(r)
    return r


def _same_dtype(op, *ts):
    d = ts[0].dtype
    for t in ts[1:]:
        if t.dtype is not d:
            raise RuntimeError(f"{op}: expected mat1 and mat2 to have the same dtype, but got: {d.torch_name} != "
                               f"{t.dtype.torch_name}")


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    _tensor(input, "addmm", "input", 1), _tensor(mat1, "addmm", "mat1", 2), _tensor(mat2, "addmm", "mat2", 3)
    if mat1.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"{'mat1' if mat1.dim() != 2 else 'mat2'} must be a matrix, got "
                           f"{(mat1 if mat1.dim() != 2 else mat2).dim()}-D tensor")
    _same_dtype("addmm", mat1, mat2)
    return _combine("addmm", input, mat1 @ mat2, beta, alpha, out)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    _tensor(input, "addmv", "input", 1), _tensor(mat, "addmv", "mat", 2), _tensor(vec, "addmv", "vec", 3)
    if mat.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {mat.dim()}, {vec.dim()}")
    return _combine("addmv", input, mat @ vec, beta, alpha, out)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    import tensorlab as tl
    _tensor(input, "addr", "input", 1), _tensor(vec1, "addr", "vec1", 2), _tensor(vec2, "addr", "vec2", 3)
    if vec1.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.dim()}-D" if vec1.dim() != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    prod = tl.outer(vec1, vec2)
    if prod.dtype is dtypes.bool_:  # torch's bool addr: beta and alpha as logical and/or
        r = (input & bool(beta)) | (prod & bool(alpha)) if beta else prod & bool(alpha)
        return r.expand(prod.shape).clone() if out is None else out.resize_(prod.shape).copy_(r)
    return _combine("addr", input, prod, beta, alpha, out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    _tensor(input, "baddbmm", "input", 1), _tensor(batch1, "baddbmm", "batch1", 2)
    _tensor(batch2, "baddbmm", "batch2", 3)
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor" if batch1.dim() != 3 else "batch2 must be a 3D tensor")
    return _combine("baddbmm", input, batch1.bmm(batch2), beta, alpha, out)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    _tensor(input, "addbmm", "input", 1), _tensor(batch1, "addbmm", "batch1", 2)
    _tensor(batch2, "addbmm", "batch2", 3)
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor" if batch1.dim() != 3 else "batch2 must be a 3D tensor")
    return _combine("addbmm", input, batch1.bmm(batch2).sum(0), beta, alpha, out)


def _inplace(fn, name, first, second):
    """Tensor.<name>: fn computed from self (a copy when self requires grad), then written over self; its
    operands keep torch's keyword names (addmm_(mat1=, mat2=), addmv_(mat=, vec=), ...)."""
    def f_(input, *args, beta=1, alpha=1, **operands):
        named = tuple(operands.pop(k) for k in (first, second) if k in operands)
        if operands:
            raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(operands))}'")
        if len(args) + len(named) != 2:
            raise TypeError(f"{name}() takes 2 tensor arguments ({first}, {second}), got {len(args) + len(named)}")
        a, b = args + named
        return overwrite(input, fn(input.clone() if input.requires_grad else input, a, b, beta=beta, alpha=alpha),
                         name)
    f_.__name__ = name
    return f_


addmm_ = _inplace(addmm, "addmm_", "mat1", "mat2")
addmv_ = _inplace(addmv, "addmv_", "mat", "vec")
addr_ = _inplace(addr, "addr_", "vec1", "vec2")
baddbmm_ = _inplace(baddbmm, "baddbmm_", "batch1", "batch2")
addbmm_ = _inplace(addbmm, "addbmm_", "batch1", "batch2")

FUNCTIONS = ("addmm", "addmv", "addr", "baddbmm", "addbmm", "addmv_")
METHODS = {n: globals()[n] for n in ("addmm", "addmv", "addr", "baddbmm", "addbmm", "addmm_", "addmv_", "addr_",
                                     "baddbmm_", "addbmm_")}
