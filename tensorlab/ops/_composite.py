"""What the composite op families (ops written over other ops: math_composites, scans_quantiles,
copy_variants, blas_composites, integer_composites, linalg_solves, repeats, stacking) share: the
tensorlab namespace without an import cycle, torch's argument errors, and the out= and in-place
contracts."""
from __future__ import annotations

from ..tensor import Tensor
from ._common import check_cast


def tl():
    import tensorlab
    return tensorlab


def tensor_arg(x, op, name="input", pos=1):
    """x, or torch's TypeError for a non-tensor argument."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


def wrap_dim(dim, n):
    """dim in [0, n) (a 0-dim tensor takes dims -1 and 0), or torch's IndexError."""
    m = max(n, 1)
    if not -m <= dim < m:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-m}, {m - 1}], but got {dim})")
    return dim + m if dim < 0 else dim


def to_out(r, out, op=None):
    """r, or r written into out= (resized to r's shape; castable as torch requires when `op` is named)."""
    if out is None:
        return r
    if op is not None:
        tensor_arg(out, op, "out")
        check_cast(r.dtype, out.dtype, op)
    if tuple(out.shape) != tuple(r.shape):
        out.resize_(r.shape)
    return out.copy_(r)


def to_outs(r, out):
    """A tuple result (a namedtuple) written into the out= tensors, returned as the same namedtuple."""
    if out is None:
        return r
    for o, t in zip(out, r):
        to_out(t, o)
    return type(r)(*out)


def overwrite(self, r, op):
    """self overwritten by r under torch's in-place contract: the result has self's shape and its
    dtype casts to self's."""
    if tuple(r.shape) != tuple(self.shape):
        raise RuntimeError(f"{op}: output with shape {list(self.shape)} doesn't match the broadcast shape "
                           f"{list(r.shape)}")
    check_cast(r.dtype, self.dtype, op)
    return self.copy_(r)


def wrap_negative(indices, n):
    """int64 indices with the negative ones counted from the end (below -n they stay negative, for the
    indexing op to refuse): no host wait, on any device."""
    from .. import dtypes
    indices = indices.to(dtypes.int64)
    return indices + (indices < 0).to(dtypes.int64) * n
