"""Sparse construction and conversion, as compositions of dense tensor ops on the parts (so one code path
serves every device and autograd flows through the values): sparse_coo_tensor, sparse_csr_tensor,
coalesce, to_dense, Tensor.to_sparse / to_sparse_coo / to_sparse_csr, and the checks of torch's
check_invariants. Data-dependent sizes (nonzero, unique) wait for the device where torch does too."""
from __future__ import annotations

from .. import dtypes, layouts
from ..tensor import Tensor
from ._tensor import SparseTensor, _like

_INT = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8)


def _tl():
    import tensorlab
    return tensorlab


def _as_tensor(x, dtype=None, device=None):
    tl = _tl()
    if isinstance(x, Tensor):
        if (dtype is not None and x.dtype is not dtype) or (device is not None and x.device != tl.device(device)):
            return x.to(device=device if device is not None else x.device, dtype=dtype or x.dtype)
        return x
    return tl.tensor(x, dtype=dtype, device=device)


def _size(size, op):
    if size is None:
        return None
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    try:
        return tuple(int(s) for s in size)
    except TypeError:
        raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, got {type(size).__name__}") from None


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False, requires_grad=False,
                      check_invariants=None, is_coalesced=None):
    """A sparse COO tensor of `indices` (sparse_dim, nnz) and `values` (nnz, *dense_shape); size inferred from
    the largest indices when not given. Duplicate indices are kept (call coalesce() to sum them)."""
    op = "sparse_coo_tensor"
    if dtype is not None and not isinstance(dtype, dtypes.DType):
        raise TypeError(f"{op}(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    vals = _as_tensor(values, dtype, device)
    dev = vals.device
    idx = indices if isinstance(indices, Tensor) else _as_tensor(indices, dtypes.int64, dev)
    if isinstance(idx, SparseTensor) or isinstance(vals, SparseTensor):
        raise TypeError(f"{op}(): indices and values must be dense (strided) tensors")
    if not (idx.dtype in _INT or idx.dtype.is_floating_point):  # torch casts real indices to int64
        raise RuntimeError(f"{op}(): indices must be an int64 tensor, got {idx.dtype}")
    if idx.device != dev:
        raise RuntimeError(f"{op}(): indices and values must be on the same device, got indices on {idx.device} "
                           f"and values on {dev}")
    idx = idx.to(dtype=dtypes.int64)
    if idx.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if vals.dim() == 0:
        raise RuntimeError(f"{op}(): values must be at least 1-D (nnz, *dense_shape), got a 0-d tensor; "
                           f"pass values.reshape(1) for one element")
    sd, nnz = idx.shape
    if vals.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           f"values: {vals.shape[0]}")
    dense = tuple(vals.shape[1:])
    size = _size(size, op)
    if size is None:
        if nnz:
            top = idx.max(1).values.tolist() if sd else []
            size = tuple(int(v) + 1 for v in top) + dense
        else:
            size = (0,) * sd + dense
        check = False
    else:
        if len(size) != sd + len(dense):
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                               f"sparse_dim = {sd}, dense_dim = {len(dense)}")
        if tuple(size[sd:]) != dense:
            raise RuntimeError(f"values has incorrect size, expected {list(size[:sd]) and [nnz] + list(size[sd:])}, "
                               f"got {[nnz] + list(dense)}")
        if any(s < 0 for s in size):
            raise RuntimeError(f"{op}(): size {list(size)} has a negative dimension")
        check = _checking(check_invariants)
    if check and nnz:
        _check_coo_bounds(idx, size)
    if requires_grad or not vals.requires_grad:  # its own autograd identity: requires_grad_() on the sparse
        vals = vals.detach()                      # tensor leaves the caller's values tensor as it is
    if requires_grad:
        vals.requires_grad_()
    return SparseTensor._build(layouts.sparse_coo, size, vals, idx, coalesced=bool(is_coalesced) or nnz <= 1)


def _checking(check_invariants):
    """check_invariants=None: the global default (tl.sparse.check_sparse_tensor_invariants)."""
    if check_invariants is None:
        from . import check_sparse_tensor_invariants
        return check_sparse_tensor_invariants.is_enabled()
    return bool(check_invariants)


def _check_coo_bounds(idx, size):
    lo = idx.min(1).values.tolist()
    hi = idx.max(1).values.tolist()
    for d, (a, b) in enumerate(zip(lo, hi)):
        if a < 0:
            raise RuntimeError(f"found negative index {a} for dim {d}")
        if b >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                               f"index {b}")


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None):
    """A sparse CSR matrix of compressed row offsets (m + 1,), column indices (nnz,) and values (nnz,)."""
    op = "sparse_csr_tensor"
    vals = _as_tensor(values, dtype, device)
    dev = vals.device
    crow = _as_tensor(crow_indices, None if isinstance(crow_indices, Tensor) else dtypes.int64, dev)
    col = _as_tensor(col_indices, None if isinstance(col_indices, Tensor) else dtypes.int64, dev)
    for name, t in (("crow_indices", crow), ("col_indices", col)):
        if t.dtype not in (dtypes.int32, dtypes.int64):
            raise RuntimeError(f"{op}(): {name} must be an int32 or int64 tensor, got {t.dtype}")
        if t.device != dev:
            raise RuntimeError(f"{op}(): {name} and values must be on the same device, got {t.device} and {dev}")
    if crow.dtype is not col.dtype:
        raise RuntimeError(f"{op}(): expected col_indices to be the same dtype as crow_indices ({crow.dtype}), "
                           f"but got {col.dtype}")
    if crow.dim() != 1 or col.dim() != 1 or vals.dim() != 1:
        raise RuntimeError(f"{op}(): tensorlab's CSR tensors are 2-D matrices without batch or dense dims: expected "
                           f"1-D crow_indices, col_indices and values, got {crow.dim()}-D, {col.dim()}-D and "
                           f"{vals.dim()}-D")
    nnz = col.shape[0]
    if vals.shape[0] != nnz:
        raise RuntimeError(f"col_indices and values must have the same number of elements, but got "
                           f"col_indices.numel(): {nnz}, values.numel(): {vals.shape[0]}")
    if crow.shape[0] < 1:
        raise RuntimeError(f"{op}(): crow_indices must have at least one element (the offset 0)")
    size = _size(size, op)
    if size is None:
        ncol = int(col.max().item()) + 1 if nnz else 0
        size = (crow.shape[0] - 1, ncol)
        check = _checking(check_invariants)
    else:
        if len(size) != 2:
            raise RuntimeError(f"{op}(): size must be 2-D (tensorlab's CSR tensors have no batch or dense dims), "
                               f"got {list(size)}")
        if crow.shape[0] != size[0] + 1:
            raise RuntimeError(f"crow_indices.numel() must be size(0) + 1, but got: {crow.shape[0]}")
        check = _checking(check_invariants)
    if check:
        first, last = int(crow[0].item()), int(crow[-1].item())
        if first != 0:
            raise RuntimeError(f"`crow_indices[..., 0] == 0` is not satisfied (got {first}).")
        if last != nnz:
            raise RuntimeError(f"`crow_indices[..., -1] == nnz` is not satisfied (got {last}, nnz {nnz}).")
        if crow.shape[0] > 1 and bool((crow[1:] < crow[:-1]).any()):
            raise RuntimeError("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is not satisfied.")
        if nnz and (int(col.min().item()) < 0 or int(col.max().item()) >= size[1]):
            raise RuntimeError("`0 <= col_indices < ncols` is not satisfied.")
    if requires_grad or not vals.requires_grad:
        vals = vals.detach()
    if requires_grad:
        vals.requires_grad_()
    return SparseTensor._build(layouts.sparse_csr, size, vals, crow=crow, col=col, sparse_dim=2)


# -- COO structure --------------------------------------------------------------------------------------
def _linear(idx, sizes):
    """Row-major linear index (nnz,) of the sparse coordinates."""
    lin = None
    for d in range(idx.shape[0]):
        lin = idx[d] if lin is None else lin * sizes[d] + idx[d]
    return lin


def _unravel(lin, sizes):
    rows = []
    for s in reversed(sizes):
        rows.append(lin % s if s else lin)
        lin = lin.div(s, rounding_mode="floor") if s else lin
    return _tl().stack(rows[::-1]) if rows else lin.reshape(0, -1)


def coalesce(self):
    """Sorted, unique indices with the values of duplicates summed (differentiable through the values)."""
    if self._sl is not layouts.sparse_coo:
        raise RuntimeError(f"coalesce expected sparse coordinate tensor layout but got {self._sl.name}")
    if self._coal:
        return self
    tl = _tl()
    idx, vals = self._idx, self._vals
    sd = self._sdim
    sizes = tuple(self._ssize[:sd])
    if vals.shape[0] == 0 or sd == 0:
        if sd == 0 and vals.shape[0]:
            vals = vals.sum(0, keepdim=True)
            idx = idx[:, :1]
        return SparseTensor._build(layouts.sparse_coo, self._ssize, vals, idx, coalesced=True, sparse_dim=sd)
    lin = _linear(idx, sizes)
    uniq, inv = tl.unique(lin, sorted=True, return_inverse=True)
    out = tl.zeros((uniq.shape[0],) + tuple(vals.shape[1:]), dtype=vals.dtype, device=vals.device)
    new_vals = out.index_add(0, inv, vals)
    return SparseTensor._build(layouts.sparse_coo, self._ssize, new_vals, _unravel(uniq, sizes), coalesced=True,
                               sparse_dim=sd)


def _coo_parts(s):
    """(indices, values) of a COO or CSR tensor (CSR rows from the offsets: the entry's row is the count of
    offsets after the first that are <= its position)."""
    if s._sl is layouts.sparse_coo:
        return s._idx, s._vals
    tl = _tl()
    crow, col = s._crow.long(), s._col.long()
    nnz = col.shape[0]
    pos = tl.arange(nnz, device=col.device)
    rows = tl.searchsorted(crow[1:].contiguous(), pos, right=True) if nnz else pos
    return tl.stack([rows, col]), s._vals


def to_dense(self, dtype=None, *, masked_grad=None):
    """The dense (strided) tensor: duplicates add up; the gradient reaches the values at their positions."""
    tl = _tl()
    idx, vals = _coo_parts(self)
    if dtype is not None:
        vals = vals.to(dtype)
    out = tl.zeros(tuple(self._ssize), dtype=vals.dtype, device=vals.device)
    if vals.shape[0] == 0:
        return out + vals.sum() * 0 if vals.requires_grad else out
    if self._sdim == 0:
        return out + vals.sum(0)
    return out.index_put(tuple(idx[d] for d in range(self._sdim)), vals, accumulate=True)


def _dense_to_sparse(x, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """Tensor.to_sparse: the COO tensor of x's nonzero entries (rows of `sparse_dim` dims that hold a nonzero,
    with their dense trailing part), coalesced; layout=tl.sparse_csr gives to_sparse_csr."""
    if layout is not None and layout is not layouts.sparse_coo:
        if layout is layouts.sparse_csr:
            return to_sparse_csr(x, dense_dim)
        if layout is layouts.strided:
            raise RuntimeError("to_sparse: expected a sparse layout (sparse_coo or sparse_csr), got strided; "
                               "use to_dense() for a dense tensor")
        raise RuntimeError(f"to_sparse: tensorlab converts to sparse_coo and sparse_csr only, got {layout}")
    if blocksize is not None:
        raise RuntimeError("to_sparse: blocksize is for the block layouts (sparse_bsr/bsc), which tensorlab lacks")
    if isinstance(x, SparseTensor):
        if x._sl is layouts.sparse_coo:
            if sparse_dim is not None and sparse_dim != x._sdim:
                raise RuntimeError(f"to_sparse: conversion from Sparse to Sparse with sparse_dim argument !="
                                   f"self.sparse_dim() is not supported (got {sparse_dim}, the tensor has "
                                   f"{x._sdim})")
            return x
        idx, vals = _coo_parts(x)
        return coalesce(SparseTensor._build(layouts.sparse_coo, x._ssize, vals, idx, coalesced=False))
    tl = _tl()
    nd = x.dim()
    sd = nd if sparse_dim is None else int(sparse_dim)
    if sparse_dim is not None and dense_dim is not None:
        raise RuntimeError("to_sparse: give sparse_dim or dense_dim, not both")
    if dense_dim is not None:
        sd = nd - int(dense_dim)
    if not 0 <= sd <= nd:
        raise RuntimeError(f"sparse_dim must be in [0, {nd}] for a {nd}-D tensor, got {sd}")
    if sd == 0:
        return SparseTensor._build(layouts.sparse_coo, x.shape, x.unsqueeze(0),
                                   tl.zeros((0, 1), dtype=dtypes.int64, device=x.device), coalesced=True, sparse_dim=0)
    mask = x != 0
    if sd < nd:
        mask = mask.reshape(tuple(x.shape[:sd]) + (-1,)).any(-1)
    idx = mask.nonzero().t().contiguous()
    vals = x[tuple(idx[d] for d in range(sd))]
    return SparseTensor._build(layouts.sparse_coo, x.shape, vals, idx, coalesced=True, sparse_dim=sd)


def to_sparse_coo(x):
    """Tensor.to_sparse_coo(): to_sparse() with every dim sparse."""
    return _dense_to_sparse(x)


def _crow_from_rows(rows, m):
    tl = _tl()
    return tl.searchsorted(rows.contiguous(), tl.arange(m + 1, device=rows.device))


def to_sparse_csr(x, dense_dim=None):
    """The CSR matrix of a 2-D dense or COO tensor (rows sorted, columns sorted within rows)."""
    if isinstance(x, SparseTensor) and x._sl is layouts.sparse_csr:
        return x
    if dense_dim:
        raise RuntimeError("to_sparse_csr: tensorlab's CSR tensors have no dense dims (dense_dim must be 0 or None)")
    if x.dim() != 2:
        raise RuntimeError(f"to_sparse_csr: expected a 2-D tensor (tensorlab's CSR tensors have no batch dims), "
                           f"got a {x.dim()}-D tensor")
    if isinstance(x, SparseTensor):
        if x._sdim != 2:
            raise RuntimeError(f"to_sparse_csr: expected a COO tensor with 2 sparse dims, got sparse_dim "
                               f"{x._sdim}")
        c = coalesce(x)
    else:
        c = _dense_to_sparse(x)
    crow = _crow_from_rows(c._idx[0], x.shape[0])
    return SparseTensor._build(layouts.sparse_csr, x.shape, c._vals, crow=crow, col=c._idx[1].contiguous(),
                               sparse_dim=2)


def dense_to_dense(x, dtype=None, *, masked_grad=None):
    """Tensor.to_dense() of a dense tensor: itself (a dtype cast when asked), as torch."""
    return x if dtype is None else x.to(dtype)


def rebuild_sparse(layout, size, parts, coalesced, device, requires_grad):
    """Unpickling: the sparse tensor of `parts` moved to `device`."""
    if layout == "sparse_coo":
        idx, vals = parts
        t = sparse_coo_tensor(idx.to(device), vals.to(device), size, is_coalesced=coalesced)
    else:
        crow, col, vals = parts
        t = sparse_csr_tensor(crow.to(device), col.to(device), vals.to(device), size)
    if requires_grad:
        t.requires_grad_()
    return t


def reduce_args(s):
    """(layout name, parts) as torch pickles a sparse tensor for torch._utils._rebuild_sparse_tensor."""
    if s._sl is layouts.sparse_coo:
        return "sparse_coo", (s._idx.detach(), s._vals.detach(), _tl().Size(s._ssize), s._coal)
    return "sparse_csr", (s._crow.detach(), s._col.detach(), s._vals.detach(), _tl().Size(s._ssize))


def rebuild_from_parts(layout, data):
    """The inverse of reduce_args (tl.load), the invariants checked."""
    if layout is layouts.sparse_coo:
        idx, vals, size, coalesced = data
        return sparse_coo_tensor(idx, vals, tuple(size), check_invariants=True, is_coalesced=coalesced)
    if layout is layouts.sparse_csr:
        crow, col, vals, size = data
        return sparse_csr_tensor(crow, col, vals, tuple(size), check_invariants=True)
    raise RuntimeError(f"load: tensorlab rebuilds sparse_coo and sparse_csr tensors, not {layout}")


__all__ = ["coalesce", "rebuild_sparse", "sparse_coo_tensor", "sparse_csr_tensor", "to_dense", "to_sparse_coo",
           "to_sparse_csr", "_like"]
