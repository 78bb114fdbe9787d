"""BLAS-shaped composites: addmm, addmv, addr, baddbmm, addbmm (beta * input + alpha * product) with
their methods and in-place forms, over matmul (so CUDA float products go to cuBLAS) and autograd.
torch's rule that beta = 0 ignores input (its NaN and inf included) is kept. float16/bfloat16 are
computed as torch's BLAS does: the product accumulated in float32, scaled and added to the scaled input
in float32, rounded once (addbmm: once per matrix of the batch, as torch's loop of addmm_; addr: torch
rounds the outer product first, and so does this). addmm and baddbmm with alpha = beta = 1 and no gradient to record go to one
backend product onto a copy of the input (matmul(..., accumulate=True): cuBLAS's beta 1 on CUDA, tensor
cores for 16-bit); the rest through the differentiable composite."""
from __future__ import annotations

from .. import dtypes, layouts
from ..autograd import grad_mode
from ..tensor import Tensor
from ._common import check_cast, empty_tensor
from ._composite import overwrite

_HALVES = (dtypes.float16, dtypes.bfloat16)
_FUSED = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


def _strided(*ts):
    """Whether every operand is a dense (strided) tensor: sparse ones keep the plain composite (their mm)."""
    return all(t.layout is layouts.strided for t in ts)


def _wide(x):
    """x as the product computes it: 16-bit floats in float32 (exact), anything else as it is."""
    return x.float() if x.dtype in _HALVES else x


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


def _combine(op, input, product, beta, alpha, out, dtype=None):
    """beta * input + alpha * product, in the product's dtype (float32 for 16-bit operands, then rounded
    once to `dtype`, the operands' dtype)."""
    from ..layout import broadcast_shapes
    dtype = product.dtype if dtype is None else dtype
    beta, alpha = _scalars(op, dtype, beta, alpha)
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
        wide = input.float() if product.dtype is not dtype and input.dtype in _HALVES else input
        r = (wide if beta == 1 else wide * beta) + scaled
    if r.dtype is not dtype:
        r = r.to(dtype)
    if out is not None:
        check_cast(r.dtype, out.dtype, op)
        out.resize_(r.shape)
        return out.copy_(r)
    return r


def _fused(input, a, b, beta, alpha, out):
    """input + a @ b as one backend product onto a copy of the broadcast input (BLAS's beta 1), or None
    where the composite must run: alpha or beta not 1, a gradient to record, out=, mixed dtypes or
    devices, an input that does not broadcast (the composite raises torch's error)."""
    if beta != 1 or alpha != 1 or out is not None or type(beta) is bool or type(alpha) is bool:
        return None
    dt = a._dtype
    if dt not in _FUSED or b._dtype is not dt or input._dtype is not dt:
        return None
    if grad_mode.is_grad_enabled() and (input.requires_grad or a.requires_grad or b.requires_grad):
        return None
    dev = a.device
    if b.device != dev or input.device != dev:
        return None
    shape = tuple(a.shape[:-1]) + (b.shape[-1],)
    if tuple(input.shape) != shape:
        from ..layout import broadcast_shapes
        try:
            if broadcast_shapes(tuple(input.shape), shape) != shape:
                return None
        except RuntimeError:
            return None
    r = empty_tensor(shape, dt, dev)
    be = a._backend
    be.copy(r, input.expand(shape))
    if a.shape[-1]:
        be.matmul(r, a, b, accumulate=True)
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
    if not _strided(input, mat1, mat2):
        return _combine("addmm", input, mat1 @ mat2, beta, alpha, out)
    if mat1.shape[1] != mat2.shape[0]:
        mat1 @ mat2  # torch's shape error
    r = _fused(input, mat1, mat2, beta, alpha, out)
    if r is not None:
        return r
    return _combine("addmm", input, _wide(mat1) @ _wide(mat2), beta, alpha, out, mat1.dtype)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    _tensor(input, "addmv", "input", 1), _tensor(mat, "addmv", "mat", 2), _tensor(vec, "addmv", "vec", 3)
    if mat.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {mat.dim()}, {vec.dim()}")
    if mat.dtype in _HALVES and vec.dtype is mat.dtype:
        return _combine("addmv", input, _wide(mat) @ _wide(vec), beta, alpha, out, mat.dtype)
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
    if batch1.dtype is not batch2.dtype or batch1.shape[0] != batch2.shape[0] or batch1.shape[2] != batch2.shape[1]:
        batch1.bmm(batch2)  # torch's error
    r = _fused(input, batch1, batch2, beta, alpha, out)
    if r is not None:
        return r
    return _combine("baddbmm", input, _wide(batch1).bmm(_wide(batch2)), beta, alpha, out, batch1.dtype)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    _tensor(input, "addbmm", "input", 1), _tensor(batch1, "addbmm", "batch1", 2)
    _tensor(batch2, "addbmm", "batch2", 3)
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor" if batch1.dim() != 3 else "batch2 must be a 3D tensor")
    if batch1.dtype in _HALVES and batch2.dtype is batch1.dtype and batch1.shape[0] and \
            batch1.shape[0] == batch2.shape[0] and batch1.shape[2] == batch2.shape[1]:
        # torch's order for 16-bit: the scaled input, then one addmm per matrix of the batch (each product
        # added in float32 and rounded)
        import tensorlab as tl
        dt = batch1.dtype
        zeros = tl.zeros((batch1.shape[1], batch2.shape[2]), dtype=dt, device=batch1.device)
        r = _combine("addbmm", input, zeros, beta, 1, None)  # beta * input, broadcast (torch's checks)
        for i in range(batch1.shape[0]):
            prod = _wide(batch1[i]) @ _wide(batch2[i])
            r = (r.float() + (prod if alpha == 1 else prod * alpha)).to(dt)
        if out is not None:
            check_cast(r.dtype, out.dtype, "addbmm")
            out.resize_(r.shape)
            return out.copy_(r)
        return r
    return _combine("addbmm", input, batch1.bmm(batch2).sum(0), beta, alpha, out)


def _addmm_activation(input, mat1, mat2, *, beta=1, alpha=1, use_gelu=False):
    """torch._addmm_activation: relu(addmm(input, mat1, mat2, beta=, alpha=)), or gelu of it with use_gelu
    (the exact GELU, as torch's CPU; torch's CUDA uses cuBLASLt's GELU_BIAS epilogue, which is GELU's tanh
    approximation: tensorlab gives the CPU's answer on every device, docs/torch-divergences.md). With
    beta = alpha = 1, a bias vector of mat2's columns and no gradient to record: one backend call
    (matmul_bias: cuBLASLt's RELU_BIAS / BIAS epilogue on CUDA), GELU then as its own kernel over the
    rounded result (as torch's CPU rounds addmm's result first); otherwise addmm, then the activation."""
    from ..nn import functional as F
    _tensor(input, "_addmm_activation", "self", 1)
    _tensor(mat1, "_addmm_activation", "mat1", 2), _tensor(mat2, "_addmm_activation", "mat2", 3)
    dt = mat1._dtype
    if (beta == 1 and alpha == 1 and type(beta) is not bool and type(alpha) is not bool and dt in _FUSED
            and mat1.dim() == 2 and mat2.dim() == 2 and mat1.shape[1] == mat2.shape[0] and mat2._dtype is dt
            and input._dtype is dt and _strided(input, mat1, mat2)
            and tuple(input.shape) in ((mat2.shape[1],), (1, mat2.shape[1]))
            and not (grad_mode.is_grad_enabled() and (input.requires_grad or mat1.requires_grad
                                                      or mat2.requires_grad))
            and mat1.device == input.device and mat2.device == input.device):
        r = empty_tensor((mat1.shape[0], mat2.shape[1]), dt, mat1.device)
        mat1._backend.matmul_bias(r, mat1, mat2, input.reshape(-1), None if use_gelu else "relu")
        return F.gelu(r) if use_gelu else r
    r = addmm(input, mat1, mat2, beta=beta, alpha=alpha)
    return F.gelu(r) if use_gelu else F.relu(r)


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

FUNCTIONS = ("addmm", "addmv", "addr", "baddbmm", "addbmm", "addmv_", "_addmm_activation")
METHODS = {n: globals()[n] for n in ("addmm", "addmv", "addr", "baddbmm", "addbmm", "addmm_", "addmv_", "addr_",
                                     "baddbmm_", "addbmm_")}
