"""Ops on sparse tensors: sparse @ dense through the backend primitive `sparse_csr_mm` (SciPy on the CPU,
cuSPARSE on CUDA) as an autograd Function whose gradients reach the values at the sparse pattern (torch's
sparse_grad semantics) and the dense operand; addmm; sum; softmax/log_softmax over the specified entries;
sparse +/- sparse, sparse * scalar, sparse (op) dense; transpose of COO tensors."""
from __future__ import annotations

import numbers

from .. import dtypes, layouts
from ..autograd.function import Function
from ..tensor import Tensor
from ._convert import _coo_parts, _crow_from_rows, _linear, coalesce, to_dense
from ._tensor import SparseTensor, _like, unsupported

_LIBRARY = (dtypes.float32, dtypes.float64)


def _tl():
    import tensorlab
    return tensorlab


# -- sparse @ dense ------------------------------------------------------------------------------------
class _CsrMM(Function):
    """out = A @ D for the CSR matrix A (crow, col, values; `rows` the COO row of each entry)."""

    @staticmethod
    def forward(ctx, values, dense, crow, col, rows, m, k):
        tl = _tl()
        d = dense.contiguous()
        out = tl.empty((m, d.shape[1]), dtype=d.dtype, device=d.device)
        out._backend.sparse_csr_mm(out, crow.contiguous(), col.contiguous(), values.contiguous(), d)
        ctx.save_for_backward(values, dense)
        ctx.structure = (crow, col, rows, m, k)
        return out

    @staticmethod
    def backward(ctx, grad):
        values, dense = ctx.saved_tensors
        crow, col, rows, m, k = ctx.structure
        gv = gd = None
        if ctx.needs_input_grad[0]:
            gv = (grad.index_select(0, rows) * dense.index_select(0, col)).sum(1)
        if ctx.needs_input_grad[1]:
            vt, crow_t, col_t, rows_t = _transposed(values, crow, col, rows, m, k)
            gd = _CsrMM.apply(vt, grad, crow_t, col_t, rows_t, k, m)
        return gv, gd, None, None, None, None, None


def _transposed(values, crow, col, rows, m, k):
    """The CSR structure of A^T: entries ordered by (column, row)."""
    tl = _tl()
    perm = tl.argsort(col * max(m, 1) + rows, stable=True)
    col_p = col.index_select(0, perm)
    return values.index_select(0, perm), _crow_from_rows(col_p, k), rows.index_select(0, perm), col_p


def _csr_structure(s):
    """(values, crow, col, rows) of a 2-D sparse matrix: a COO tensor is coalesced first (values summed)."""
    if s._sl is layouts.sparse_csr:
        idx, vals = _coo_parts(s)
        return vals, s._crow.long(), s._col.long(), idx[0]
    c = coalesce(s)
    rows, col = c._idx[0], c._idx[1]
    return c._vals, _crow_from_rows(rows, s._ssize[0]), col.contiguous(), rows.contiguous()


def _check_mm(op, a, b):
    for name, t in (("mat1", a), ("mat2", b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
        if t.dim() != 2:
            raise RuntimeError(f"{op}: {name} must be a matrix, got {t.dim()}-D tensor")
        if isinstance(t, SparseTensor) and (t._sdim != 2):
            raise RuntimeError(f"{op}: a sparse {name} must have 2 sparse dims and no dense dims, got sparse_dim "
                               f"{t._sdim}, dense_dim {t.dense_dim()}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op}: expected mat1 and mat2 to have the same dtype, but got: {a.dtype.torch_name} != "
                           f"{b.dtype.torch_name}")
    if a.device != b.device:
        raise RuntimeError(f"{op}: expected mat1 and mat2 on the same device, but got {a.device} and {b.device}")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                           f"{b.shape[0]}x{b.shape[1]})")
    if a.dtype is dtypes.bool_:
        raise RuntimeError(f"{op}: \"addmm_sparse\" not implemented for 'Bool'")


def _sparse_dense(s, d):
    """sparse (m, k) @ dense (k, n) -> dense (m, n)."""
    m, k = s._ssize
    vals, crow, col, rows = _csr_structure(s)
    if vals.dtype in _LIBRARY:
        return _CsrMM.apply(vals, d, crow, col, rows, m, k)
    tl = _tl()  # other dtypes (integers, half types): the same product as index ops, differentiable
    out = tl.zeros((m, d.shape[1]), dtype=d.dtype, device=d.device)
    return out.index_add(0, rows, vals.unsqueeze(1) * d.index_select(0, col))


_REDUCE = ("sum", "mean", "amax", "amin")


def spmm(input, mat2):
    """torch.spmm: input @ mat2 with input sparse (COO or CSR), mat2 dense (torch.sparse.mm's product)."""
    return mm(input, mat2)


def mm(mat1, mat2, reduce=None):
    """torch.sparse.mm: sparse @ dense -> dense, dense @ sparse -> dense, sparse @ sparse -> sparse (COO);
    the gradient of a sparse operand is sparse with its pattern. reduce= ("sum", "mean", "amax", "amin")
    reduces each row's products over the specified entries of a sparse CSR mat1 (rows without any: 0)."""
    _check_mm("mm", mat1, mat2)
    if reduce is not None:
        return _mm_reduce(mat1, mat2, reduce)
    s1, s2 = isinstance(mat1, SparseTensor), isinstance(mat2, SparseTensor)
    if s1 and s2:
        out = _sparse_dense(mat1, to_dense(mat2))
        return _from_dense_like(out, mat1._sl if mat1._sl is mat2._sl else layouts.sparse_coo)
    if s1:
        return _sparse_dense(mat1, mat2)
    if s2:
        return _sparse_dense(transpose(mat2, 0, 1), mat1.t()).t()
    return mat1.mm(mat2)


def _mm_reduce(a, d, reduce):
    if reduce not in _REDUCE:
        raise RuntimeError(f"sparse.mm: reduce argument must be one of {list(_REDUCE)}, but got {reduce}")
    if not isinstance(a, SparseTensor) or a._sl is not layouts.sparse_csr or isinstance(d, SparseTensor):
        raise RuntimeError("sparse.mm: reduce= takes a sparse CSR mat1 and a dense mat2")
    tl = _tl()
    m = a._ssize[0]
    idx, vals = _coo_parts(a)
    rows, col = idx[0], idx[1]
    prod = vals.unsqueeze(1) * d.index_select(0, col)
    out = tl.zeros((m, d.shape[1]), dtype=d.dtype, device=d.device)
    if reduce == "sum":
        return out.index_add(0, rows, prod)
    if reduce == "mean":
        cnt = tl.zeros(m, dtype=d.dtype, device=d.device).index_add(0, rows, tl.ones_like(vals, dtype=d.dtype))
        return out.index_add(0, rows, prod) / cnt.clamp(min=1).unsqueeze(1)
    return out.scatter_reduce(0, rows.unsqueeze(1).expand(prod.shape), prod, reduce, include_self=False)


def sampled_addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0, out=None):
    """torch.sparse.sampled_addmm: beta * input + alpha * (mat1 @ mat2) at input's specified entries only; input
    a sparse CSR matrix, the result CSR with its pattern."""
    if not isinstance(input, SparseTensor) or input._sl is not layouts.sparse_csr:
        raise RuntimeError("sampled_addmm: Expected self to be a sparse CSR tensor (tl.sparse_csr layout)")
    for name, t in (("mat1", mat1), ("mat2", mat2)):
        if not isinstance(t, Tensor) or isinstance(t, SparseTensor) or t.dim() != 2:
            raise RuntimeError(f"sampled_addmm: Expected {name} to be a dense 2-D tensor")
    if mat1.shape[1] != mat2.shape[0] or (mat1.shape[0], mat2.shape[1]) != tuple(input._ssize):
        raise RuntimeError(f"sampled_addmm: shapes do not match: input {list(input._ssize)}, mat1 "
                           f"{list(mat1.shape)}, mat2 {list(mat2.shape)}")
    if not (mat1.dtype is mat2.dtype is input.dtype):
        raise RuntimeError(f"sampled_addmm: Expected mat1, mat2 and self to have the same dtype, got {mat1.dtype}, "
                           f"{mat2.dtype} and {input.dtype}")
    idx, vals = _coo_parts(input)
    picked = (mat1.index_select(0, idx[0]) * mat2.t().index_select(0, idx[1])).sum(1)
    new = picked * alpha if beta == 0 else vals * beta + picked * alpha
    res = _like(input, new)
    if out is not None:
        raise RuntimeError("sampled_addmm: out= is not supported for sparse results in tensorlab; call without out=")
    return res


def _from_dense_like(x, layout):
    from ._convert import _dense_to_sparse, to_sparse_csr
    return to_sparse_csr(x) if layout is layouts.sparse_csr else _dense_to_sparse(x)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """torch.sparse.addmm: beta * mat + alpha * (mat1 @ mat2), mat1 sparse, mat and mat2 dense."""
    if isinstance(mat, SparseTensor):
        mat = to_dense(mat)
    prod = mm(mat1, mat2)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod + mat.expand_as(prod) * 0 if mat.requires_grad else prod
    return prod + (mat if beta == 1 else mat * beta)


def matmul(a, b):
    """Tensor.matmul / @ with a sparse operand: 2-D x 2-D through mm; a 1-D dense vector as a column."""
    if isinstance(b, Tensor) and not isinstance(b, SparseTensor) and b.dim() == 1:
        return mm(a, b.unsqueeze(1)).squeeze(1)
    if isinstance(a, Tensor) and not isinstance(a, SparseTensor) and a.dim() == 1:
        return mm(a.unsqueeze(0), b).squeeze(0)
    return mm(a, b)


# -- structure ops -------------------------------------------------------------------------------------
def transpose(s, dim0, dim1):
    """The COO tensor with two sparse dims swapped (uncoalesced: the order changes)."""
    if s._sl is not layouts.sparse_coo:
        raise unsupported("aten::transpose", s._sl, s.device, RuntimeError)
    n = len(s._ssize)
    d0, d1 = dim0 % n if n else 0, dim1 % n if n else 0
    if d0 == d1:
        return s
    if d0 >= s._sdim or d1 >= s._sdim:
        raise RuntimeError(f"transpose: tensorlab transposes sparse dims of a COO tensor only (sparse_dim "
                           f"{s._sdim}, got dims {dim0} and {dim1})")
    order = list(range(s._sdim))
    order[d0], order[d1] = order[d1], order[d0]
    size = list(s._ssize)
    size[d0], size[d1] = size[d1], size[d0]
    idx = s._idx.index_select(0, _tl().tensor(order, device=s._idx.device))
    return SparseTensor._build(layouts.sparse_coo, size, s._vals, idx, coalesced=s._nnz() <= 1, sparse_dim=s._sdim)


def t(s):
    """2-D transpose of a COO matrix."""
    if len(s._ssize) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                           f"{s._sdim} sparse and {s.dense_dim()} dense dimensions")
    return transpose(s, 0, 1) if len(s._ssize) == 2 else s


# -- arithmetic ----------------------------------------------------------------------------------------
def _scalar(x):
    return isinstance(x, (numbers.Number, bool)) or (isinstance(x, Tensor) and not isinstance(x, SparseTensor)
                                                     and x.dim() == 0)


def add(a, b, *, alpha=1):
    """sparse + sparse -> sparse (indices concatenated; coalesced when both were); sparse + dense -> dense."""
    if isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        if a._ssize != b._ssize:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                               f"{list(a._ssize)} while other has size {list(b._ssize)} (FYI: dense-sparse addition "
                               f"does not currently support broadcasting)")
        if a._sl is not b._sl:
            raise RuntimeError(f"add: expected both operands to have one layout, got {a._sl.name} and {b._sl.name}")
        if a.device != b.device:
            raise RuntimeError(f"add: expected both operands on one device, got {a.device} and {b.device}")
        if a._sdim != b._sdim:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same sparse_dim, got {a._sdim} and "
                               f"{b._sdim}")
        tl = _tl()
        if a._sl is layouts.sparse_csr:
            from ._convert import to_sparse_csr
            return to_sparse_csr(add(_csr_as_coo(a), _csr_as_coo(b), alpha=alpha))
        dt = dtypes.promote_types(a.dtype, b.dtype)
        bv = b._vals if alpha == 1 else b._vals * alpha
        vals = tl.cat([a._vals.to(dt), bv.to(dt)])
        out = SparseTensor._build(layouts.sparse_coo, a._ssize, vals, tl.cat([a._idx, b._idx], 1), coalesced=False,
                                  sparse_dim=a._sdim)
        return coalesce(out) if a._coal and b._coal else out
    if isinstance(a, SparseTensor):
        if not isinstance(b, Tensor):
            raise TypeError(f"add(): a sparse tensor adds to a tensor, not {type(b).__name__} (torch's sparse add "
                            f"takes no scalar)")
        return to_dense(a) + (b if alpha == 1 else b * alpha)
    return a + (to_dense(b) if alpha == 1 else to_dense(b) * alpha)


def _csr_as_coo(s):
    idx, vals = _coo_parts(s)
    return SparseTensor._build(layouts.sparse_coo, s._ssize, vals, idx, coalesced=True, sparse_dim=2)


def mul(a, b):
    """sparse * scalar (or 0-d tensor) -> sparse; sparse * dense of the same shape -> sparse with a's pattern."""
    if isinstance(b, SparseTensor) and not isinstance(a, SparseTensor):
        a, b = b, a
    if isinstance(b, SparseTensor):
        if a._sl is layouts.sparse_coo and b._sl is layouts.sparse_coo and a._ssize == b._ssize:
            return _mul_sparse(a, b)
        raise RuntimeError(f"mul: sparse * sparse needs two COO tensors of one size, got {a._sl.name} "
                           f"{list(a._ssize)} and {b._sl.name} {list(b._ssize)}")
    if _scalar(b):
        return _like(a, a._vals * b)
    if isinstance(b, Tensor):
        if tuple(b.shape) != tuple(a._ssize) or a.dense_dim():
            raise RuntimeError(f"mul: sparse * dense needs a sparse tensor without dense dims and a dense tensor of "
                               f"its size, got {a._sl.name} {list(a._ssize)} and {list(b.shape)}")
        idx, vals = _coo_parts(a)
        picked = b[tuple(idx[d] for d in range(a._sdim))]
        return _like(a, vals * picked)
    return NotImplemented


def _mul_sparse(a, b):
    """Elementwise product of two COO tensors: the entries present in both."""
    tl = _tl()
    a, b = coalesce(a), coalesce(b)
    sizes = tuple(a._ssize[:a._sdim])
    la, lb = _linear(a._idx, sizes), _linear(b._idx, sizes)
    if la.shape[0] == 0 or lb.shape[0] == 0:
        keep_a = tl.zeros(0, dtype=dtypes.int64, device=la.device)
        pos = keep_a
    else:
        pos = tl.searchsorted(lb, la).clamp(max=lb.shape[0] - 1)
        keep_a = (lb.index_select(0, pos) == la).nonzero().reshape(-1)
        pos = pos.index_select(0, keep_a)
    vals = a._vals.index_select(0, keep_a) * b._vals.index_select(0, pos)
    return SparseTensor._build(layouts.sparse_coo, a._ssize, vals, a._idx.index_select(1, keep_a), coalesced=True,
                               sparse_dim=a._sdim)


def div(a, b, *, rounding_mode=None):
    """sparse / scalar -> sparse."""
    if not isinstance(a, SparseTensor) or not _scalar(b):
        raise RuntimeError("div: tensorlab divides a sparse tensor by a scalar (or a 0-d dense tensor) only")
    return _like(a, a._vals.div(b, rounding_mode=rounding_mode))


def neg(a):
    """-sparse."""
    return _like(a, -a._vals)


# -- reductions -----------------------------------------------------------------------------------------
def sum(input, dim=None, keepdim=False, dtype=None):  # noqa: A001  (torch.sparse.sum)
    """torch.sparse.sum: the sum of the specified values; over `dim` a sparse tensor of the remaining sparse
    dims (a dense tensor when every sparse dim is summed)."""
    if not isinstance(input, SparseTensor):
        raise RuntimeError("sparse.sum: expected a sparse tensor, got a dense (strided) one; use torch.sum")
    if keepdim:
        raise RuntimeError("sparse.sum: keepdim=True is not supported for sparse tensors (as torch)")
    s = input if input._sl is layouts.sparse_coo else _csr_as_coo(input)
    vals = s._vals if dtype is None else s._vals.to(dtype)
    if dim is None:
        return vals.sum()
    nd = len(s._ssize)
    dims = sorted({d % nd for d in ((dim,) if isinstance(dim, int) else dim)})
    sd = s._sdim
    sparse_dims = [d for d in dims if d < sd]
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_dims:
        vals = vals.sum(dense_dims)
    if len(sparse_dims) == sd:
        return vals.sum(0)
    if not sparse_dims:
        return _like(s, vals) if not dense_dims else SparseTensor._build(
            layouts.sparse_coo, [n for i, n in enumerate(s._ssize) if i not in dims], vals, s._idx, coalesced=s._coal,
            sparse_dim=sd)
    keep = [d for d in range(sd) if d not in sparse_dims]
    idx = s._idx.index_select(0, _tl().tensor(keep, device=s._idx.device))
    size = [n for i, n in enumerate(s._ssize) if i not in dims]
    return coalesce(SparseTensor._build(layouts.sparse_coo, size, vals, idx, coalesced=False, sparse_dim=len(keep)))


def _softmax(input, dim, dtype, log):
    op = "log_softmax" if log else "softmax"
    if not isinstance(input, SparseTensor) or input._sl is not layouts.sparse_coo:
        raise RuntimeError(f"sparse.{op}: expected a sparse COO tensor")
    tl = _tl()
    s = coalesce(input)
    vals = s._vals if dtype is None else s._vals.to(dtype)
    if not vals.dtype.is_floating_point:
        raise RuntimeError(f"sparse.{op}: expected a floating point tensor, got {vals.dtype}")
    nd = len(s._ssize)
    d = dim % nd
    sd = s._sdim
    if d >= sd:  # a dense dim: the ordinary softmax of each value slice
        fn = tl.log_softmax if log else tl.softmax
        return _like(s, fn(vals, d - sd + 1))
    if vals.shape[0] == 0:
        return _like(s, vals)
    others = [i for i in range(sd) if i != d]
    if others:
        key = _linear(s._idx.index_select(0, tl.tensor(others, device=vals.device)),
                      [s._ssize[i] for i in others])
        _, group = tl.unique(key, return_inverse=True)
        n = int(group.max().item()) + 1
    else:
        group = tl.zeros(vals.shape[0], dtype=dtypes.int64, device=vals.device)
        n = 1
    shape = (n,) + tuple(vals.shape[1:])
    gidx = group.reshape((-1,) + (1,) * (vals.dim() - 1)).expand(vals.shape)
    mx = tl.full(shape, float("-inf"), dtype=vals.dtype, device=vals.device).scatter_reduce(
        0, gidx, vals.detach(), "amax", include_self=True)
    shifted = vals - mx.index_select(0, group)
    e = shifted.exp()
    tot = tl.zeros(shape, dtype=vals.dtype, device=vals.device).index_add(0, group, e)
    if log:
        return _like(s, shifted - tot.log().index_select(0, group))
    return _like(s, e / tot.index_select(0, group))


def softmax(input, dim, *, dtype=None):
    """torch.sparse.softmax: softmax over the specified entries along `dim` (unspecified ones count as -inf);
    the result has the input's (coalesced) pattern."""
    return _softmax(input, dim, dtype, False)


def log_softmax(input, dim, *, dtype=None):
    """torch.sparse.log_softmax: log of sparse.softmax, computed stably."""
    return _softmax(input, dim, dtype, True)


def accumulate_grad(old, g):
    """AccumulateGrad with a sparse gradient (autograd/engine.py): stored as it comes, added to a sparse .grad
    (indices concatenated), or densified into a dense one."""
    g = g.detach()
    if old is None:
        return g
    if isinstance(old, SparseTensor):
        return add(old, g) if isinstance(g, SparseTensor) else to_dense(old) + g
    return old + to_dense(g)


def spdiags(diagonals, offsets, shape, layout=None):
    """torch.sparse.spdiags: the (m, n) sparse matrix with row k of `diagonals` on diagonal offsets[k] (the
    value at column j is diagonals[k, j], SciPy's convention); COO (uncoalesced, diagonal by diagonal) or, with
    layout=tl.sparse_csr, CSR."""
    tl = _tl()
    if not isinstance(diagonals, Tensor) or diagonals.dim() != 2:
        raise RuntimeError("spdiags: Diagonals must be matrix (a 2-D tensor)")
    if not isinstance(offsets, Tensor) or offsets.dim() != 1 or offsets.dtype.is_floating_point:
        raise RuntimeError("spdiags: Offsets must be a vector of integers")
    if len(shape) != 2:
        raise RuntimeError(f"spdiags: Output shape must be 2d, got {list(shape)}")
    if layout is not None and layout not in (layouts.sparse_coo, layouts.sparse_csr):
        raise RuntimeError("spdiags: Only sparse_coo and sparse_csr layouts are supported for the output")
    offs = [int(o) for o in offsets.tolist()]  # host values, as torch reads them
    if len(offs) != diagonals.shape[0]:
        raise RuntimeError(f"spdiags: Number of diagonals ({diagonals.shape[0]}) does not match the number of "
                           f"offsets ({len(offs)})")
    if len(set(offs)) != len(offs):
        raise RuntimeError("Offset tensor contains duplicate values")
    m, n = int(shape[0]), int(shape[1])
    rows, cols, vals = [], [], []
    dev = diagonals.device
    for k, o in enumerate(offs):
        lo, hi = max(0, o), min(n, m + o, diagonals.shape[1])
        if hi <= lo:
            continue
        c = tl.arange(lo, hi, device=dev)
        cols.append(c)
        rows.append(c - o)
        vals.append(diagonals[k].narrow(0, lo, hi - lo))
    if vals:
        idx, v = tl.stack([tl.cat(rows), tl.cat(cols)]), tl.cat(vals)
    else:
        idx = tl.zeros((2, 0), dtype=dtypes.int64, device=dev)
        v = tl.zeros(0, dtype=diagonals.dtype, device=dev)
    out = SparseTensor._build(layouts.sparse_coo, (m, n), v, idx, coalesced=False, sparse_dim=2)
    if layout is layouts.sparse_csr:
        from ._convert import to_sparse_csr
        return to_sparse_csr(out)
    return out
