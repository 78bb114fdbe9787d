"""Small tensor-algebra composites real torch code calls: tensordot, kron, cross (torch.cross and
torch.linalg.cross), vander (torch.vander and torch.linalg.vander), block_diag, cartesian_prod,
tril_indices / triu_indices, linalg.cond. Written over views, broadcasting, matmul, cumprod and
slice copies, so they run on every device (cond needs the SVD: CPU) and differentiate through
those ops."""
from __future__ import annotations

from .. import _warn, dtypes, layouts
from ..tensor import Tensor
from . import creation
from .repeats import _to_out, _wrap


def _tensor(x, op, name="input", pos=1):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


def tensordot(a, b, dims=2, out=None):
    """torch.tensordot: contract the last `dims` dims of a with the first `dims` of b, or the
    listed dims (dims=([a dims], [b dims])); one matrix product over the permuted operands."""
    _tensor(a, "tensordot", "a")
    _tensor(b, "tensordot", "b", 2)
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = list(dims[0]), list(dims[1])
        if isinstance(dims[0], int):
            da, db = [dims[0]], [dims[1]]
        if len(da) != len(db):
            raise RuntimeError(f"both dimension lists should have same length (got {len(da)} and {len(db)})")
        da = [_wrap(d, a.dim(), "tensordot") for d in da]
        db = [_wrap(d, b.dim(), "tensordot") for d in db]
    for i, j in zip(da, db):
        # a contracted size-1 dim broadcasts, as torch's: sum the other operand over its dim first
        if a.shape[i] == 1 and b.shape[j] != 1:
            b = b.sum(j, keepdim=True)
        elif b.shape[j] == 1 and a.shape[i] != 1:
            a = a.sum(i, keepdim=True)
        if a.shape[i] != b.shape[j]:
            shown = i - a.dim() if isinstance(dims, int) else i  # torch counts a's dims from the end there
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[i]} in dim {shown} "
                               f"and second has size {b.shape[j]} in dim {j}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {a.dtype.torch_name} but found {b.dtype.torch_name} (tensordot)")
    fa = [d for d in range(a.dim()) if d not in da]
    fb = [d for d in range(b.dim()) if d not in db]
    k = 1
    for d in da:
        k *= a.shape[d]
    sa = [a.shape[d] for d in fa]
    sb = [b.shape[d] for d in fb]
    m = 1
    for s in sa:
        m *= s
    n = 1
    for s in sb:
        n *= s
    r = a.permute(fa + da).reshape(m, k).mm(b.permute(db + fb).reshape(k, n)).reshape(sa + sb)
    return _to_out(r, out)


def kron(input, other, *, out=None):
    """torch.kron: the Kronecker product (dims aligned from the right, missing ones are 1)."""
    _tensor(input, "kron")
    _tensor(other, "kron", "other", 2)
    nd = max(input.dim(), other.dim())
    a = input.reshape((1,) * (nd - input.dim()) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.dim()) + tuple(other.shape))
    ia, ib = [], []
    for sa, sb in zip(a.shape, b.shape):
        ia += [sa, 1]
        ib += [1, sb]
    r = (a.reshape(ia) * b.reshape(ib)).reshape([sa * sb for sa, sb in zip(a.shape, b.shape)])
    return _to_out(r, out)


def _cross(a, b, d):
    """a x b along dim d (size 3), from narrowed views: no index tensors, no device wait."""
    from .shape import cat
    a0, a1, a2 = (a.narrow(d, k, 1) for k in range(3))
    b0, b1, b2 = (b.narrow(d, k, 1) for k in range(3))
    return cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def _cross_args(input, other, op):
    _tensor(input, op)
    _tensor(other, op, "other", 2)
    if input.dim() != other.dim():
        raise RuntimeError(f"{op}: inputs must have the same number of dimensions.")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.torch_name} but found {other.dtype.torch_name} ({op} "
                           f"takes inputs of one dtype)")
    from ..layout import broadcast_shapes
    shape = tuple(broadcast_shapes(tuple(input.shape), tuple(other.shape)))
    return input.expand(shape), other.expand(shape), shape


def linalg_cross(input, other, *, dim=-1, out=None):
    """torch.linalg.cross: the 3-D cross product along `dim` (inputs broadcast)."""
    a, b, shape = _cross_args(input, other, "linalg.cross")
    d = _wrap(dim, len(shape), "linalg.cross")
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    return _to_out(_cross(a, b, d), out)


def cross(input, other, dim=None, *, out=None):
    """torch.cross: linalg.cross, but dim=None (deprecated, with torch's warning) takes the first
    dim of size 3."""
    a, b, shape = _cross_args(input, other, "linalg.cross")
    if dim is None:
        _warn.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                   "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree with "
                   "that of linalg.cross in a future release.")
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim, out=out)


def _vander(x, n):
    """(..., len, n): powers 0..n-1 of each element (cumprod promotes integers to int64, as torch)."""
    ones = creation.ones(tuple(x.shape) + (1,), dtype=x.dtype, device=x.device)
    if n == 0:
        return ones[..., :0].to(dtypes.int64 if not x.dtype.is_floating_point else x.dtype)
    if n == 1:
        return ones if x.dtype.is_floating_point else ones.to(dtypes.int64)
    from .shape import cat
    return cat([ones, x.unsqueeze(-1).expand(tuple(x.shape) + (n - 1,))], -1).cumprod(-1)


def linalg_vander(x, *, N=None):
    """torch.linalg.vander: increasing powers x^0 .. x^(N-1) along a new last dim."""
    _tensor(x, "linalg.vander", "x")
    if x.dim() < 1:  # torch 2.13 takes a 0-d x as one element: vander(tensor(2.), N=3) is [[1, 2, 4]]
        x = x.reshape(1)
    if x.dtype is dtypes.bool_:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    return _vander(x, n)


def vander(x, N=None, increasing=False):
    """torch.vander: columns x^(N-1) .. x^0 (increasing=True: x^0 .. x^(N-1)) of a 1-D x."""
    _tensor(x, "vander", "x")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if x.dtype is dtypes.bool_:
        x = x.to(dtypes.int64)
    r = _vander(x, n)
    return r if increasing else r.flip(-1)


def block_diag(*tensors):
    """torch.block_diag: the tensors (0-, 1- or 2-D) as blocks on the diagonal of one matrix."""
    ts = []
    dt = dtypes.result_type(*tensors) if tensors else None  # torch's result_type: 0-dim inputs rank lower
    for i, t in enumerate(tensors):
        _tensor(t, "block_diag", "tensors")
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        ts.append(t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t)
    if not ts:
        return creation.empty((1, 0))
    dev = ts[0].device
    rows = sum(t.shape[0] for t in ts)
    cols = sum(t.shape[1] for t in ts)
    out = creation.zeros((rows, cols), dtype=dt, device=dev)
    r = c = 0
    for t in ts:
        h, w = t.shape
        out[r:r + h, c:c + w] = t.to(dt)
        r += h
        c += w
    return out


def cartesian_prod(*tensors):
    """torch.cartesian_prod: every combination of the 1-D inputs' elements, one per row."""
    for t in tensors:
        _tensor(t, "cartesian_prod", "tensors")
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    from .repeats import meshgrid
    from .shape import stack
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def _tri_indices(row, col, offset, dtype, device, lower, op):
    if row < 0 or col < 0:
        raise RuntimeError(f"row must be non-negative, got{row}" if row < 0 else f"col must be non-negative, got{col}")
    dt = dtypes.int64 if dtype is None else dtype
    if dt not in (dtypes.int32, dtypes.int64):
        raise RuntimeError(f"\"{op}\" not implemented for '{dt.torch_name}'")
    r = creation.arange(row, device=device).unsqueeze(1).expand(row, col)
    c = creation.arange(col, device=device).unsqueeze(0).expand(row, col)
    keep = (c - r <= offset) if lower else (c - r >= offset)
    from .shape import stack
    return stack([r[keep], c[keep]]).to(dt)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False, requires_grad=False):
    """torch.tril_indices: the (row, col) indices of the lower triangle, row-major."""
    layouts.check(layout, "tril_indices")
    if requires_grad:
        raise RuntimeError("tril_indices(): only Tensors of floating point dtype can require gradients (its result is int64); leave requires_grad out")
    return _tri_indices(row, col, offset, dtype, device, True, "tril_indices")


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False, requires_grad=False):
    """torch.triu_indices: the (row, col) indices of the upper triangle, row-major."""
    layouts.check(layout, "triu_indices")
    if requires_grad:
        raise RuntimeError("triu_indices(): only Tensors of floating point dtype can require gradients (its result is int64); leave requires_grad out")
    return _tri_indices(row, col, offset, dtype, device, False, "triu_indices")


def cond(A, p=None, *, out=None):
    """torch.linalg.cond: ||A|| ||A^-1|| in the p-norm; p None/2/-2 from the singular values."""
    from . import lapack, linalg_composites
    lapack._check(A, "linalg.cond", square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        s = lapack.svdvals(A)
        r = s.amax(-1) / s.amin(-1) if p != -2 else s.amin(-1) / s.amax(-1)
        return _to_out(r, out)
    return _to_out(linalg_composites.matrix_norm(A, p) * linalg_composites.matrix_norm(lapack.inv(A), p), out)


def matrix_exp(A):
    """torch.linalg.matrix_exp (also torch.matrix_exp, Tensor.matrix_exp): scaling and squaring
    around a Taylor polynomial (degree 18 in float64, 12 in float32; ||A / 2^s||_1 <= 1/2), written
    over matmul, so it runs on every device and differentiates through the products. One scaling
    for the whole batch (its largest norm: one device wait). float16/bfloat16 compute in float32."""
    name = "linalg.matrix_exp"
    _tensor(A, name, "A")
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype.torch_name}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    low = A.dtype in (dtypes.float16, dtypes.bfloat16)
    X = A.to(dtypes.float32) if low else A
    n = X.shape[-1]
    eye = creation.eye(n, dtype=X.dtype, device=X.device)
    if X.numel() == 0:
        return (X * 0 + eye).to(A.dtype) if n else X.clone()
    norm = float(X.detach().abs().sum(-2).amax().item())  # the largest 1-norm in the batch
    import math
    s = 0 if norm <= 0.5 or not math.isfinite(norm) else int(math.ceil(math.log2(norm / 0.5)))
    Xs = X / (2.0 ** s) if s else X
    degree = 18 if X.dtype is dtypes.float64 else 12
    P = eye.expand(X.shape)
    for k in range(degree, 0, -1):
        P = eye + (Xs @ P) / k
    for _ in range(s):
        P = P @ P
    return P.to(A.dtype) if low else P


FUNCTIONS = ("tensordot", "kron", "cross", "vander", "block_diag", "cartesian_prod", "tril_indices", "triu_indices",
             "matrix_exp")
METHODS = {"kron": kron, "cross": cross, "matrix_exp": matrix_exp}
