"""The Tensor methods of sparse tensors and the dense tensor's sparse methods, bound once at import
(tensorlab/__init__.py calls install() after the ops have bound theirs)."""
from __future__ import annotations

from .. import layouts
from ..tensor import Tensor
from . import _convert as C
from . import _ops as O
from . import _tensor as T
from ._tensor import SparseTensor


def _sparse_methods():
    def sub(a, b, *, alpha=1):
        return O.add(a, b, alpha=-alpha)

    def rsub(a, b, *, alpha=1):
        return O.add(O.neg(a), b) if alpha == 1 else O.add(O.neg(a) * alpha, b)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        """COO itself, or the COO/CSR conversion of a CSR tensor."""
        if layout is layouts.sparse_csr:
            return C.to_sparse_csr(self, dense_dim)
        return C._dense_to_sparse(self, sparse_dim, layout=layout, blocksize=blocksize, dense_dim=dense_dim)

    def sum_(self, dim=None, keepdim=False, *, dtype=None):
        """Tensor.sum of a sparse tensor: torch.sparse.sum."""
        return O.sum(self, dim, keepdim, dtype)

    def to_sparse_coo(self):
        """The COO form (self for COO)."""
        return to_sparse(self)

    def mm(self, mat2):
        """sparse @ mat2 (torch.sparse.mm)."""
        return O.mm(self, mat2)

    def matmul(self, other):
        """sparse @ other."""
        return O.matmul(self, other)

    def rmatmul(self, other):
        return O.matmul(other, self)

    def coalesce(self):
        """Sum duplicate entries; sorted indices (torch's coalesce)."""
        return C.coalesce(self)

    def to_dense(self, dtype=None, *, masked_grad=None):
        """The dense (strided) tensor."""
        return C.to_dense(self, dtype, masked_grad=masked_grad)

    def to_sparse_csr(self, dense_dim=None):
        """The CSR form of a 2-D COO tensor (self for CSR)."""
        return C.to_sparse_csr(self, dense_dim)

    def add(self, other, *, alpha=1):
        """sparse + sparse -> sparse; sparse + dense -> dense."""
        return O.add(self, other, alpha=alpha)

    def mul(self, other):
        """sparse * scalar / same-size dense / sparse."""
        return O.mul(self, other)

    def div(self, other, *, rounding_mode=None):
        """sparse / scalar."""
        return O.div(self, other, rounding_mode=rounding_mode)

    def neg(self):
        """-sparse."""
        return O.neg(self)

    def transpose(self, dim0, dim1):
        """Swap two sparse dims of a COO tensor."""
        return O.transpose(self, dim0, dim1)

    def t(self):
        """The transposed COO matrix."""
        return O.t(self)

    def softmax(self, dim, dtype=None):
        """torch.sparse.softmax as a method (torch allows it on COO tensors)."""
        return O.softmax(self, dim, dtype=dtype)

    def log_softmax(self, dim, dtype=None):
        """torch.sparse.log_softmax as a method."""
        return O.log_softmax(self, dim, dtype=dtype)

    def zero_(self):
        """Drop every entry (nnz 0), in place, as torch."""
        from .. import dtypes
        import tensorlab as tl
        vals = tl.zeros((0,) + tuple(self._vals.shape[1:]), dtype=self._vals.dtype, device=self.device)
        if self._idx is not None:  # every new part made first, then published (a failure changes nothing)
            idx = tl.zeros((self._sdim, 0), dtype=dtypes.int64, device=self.device)
            self._vals, self._idx = vals, idx
        else:
            crow = tl.zeros(self._ssize[0] + 1, dtype=self._crow.dtype, device=self.device)
            col = tl.zeros(0, dtype=self._col.dtype, device=self.device)
            self._vals, self._crow, self._col = vals, crow, col
        self._coal = True
        return self

    def half(self):
        from .. import dtypes
        return self.to(dtype=dtypes.float16)

    return {
        "add": add, "__add__": add, "__radd__": lambda a, b: O.add(b, a), "sub": sub, "__sub__": sub,
        "__rsub__": rsub, "mul": mul, "__mul__": mul, "__rmul__": mul, "div": div, "__truediv__": div,
        "neg": neg, "__neg__": neg, "mm": mm, "matmul": matmul, "__matmul__": matmul, "__rmatmul__": rmatmul,
        "coalesce": coalesce, "to_dense": to_dense, "to_sparse": to_sparse, "to_sparse_coo": to_sparse_coo,
        "to_sparse_csr": to_sparse_csr, "transpose": transpose, "t": t, "sum": sum_, "softmax": softmax,
        "log_softmax": log_softmax, "zero_": zero_, "half": half,
    }


def _dense_methods():
    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        """The sparse COO tensor of the nonzero entries (sparse_dim: the leading dims made sparse), or with
        layout=tl.sparse_csr the CSR matrix."""
        return C._dense_to_sparse(self, sparse_dim, layout=layout, blocksize=blocksize, dense_dim=dense_dim)

    def to_sparse_coo(self):
        """The sparse COO tensor of the nonzero entries, every dim sparse."""
        return C._dense_to_sparse(self)

    def to_sparse_csr(self, dense_dim=None):
        """The CSR matrix of a 2-D tensor's nonzero entries."""
        return C.to_sparse_csr(self, dense_dim)

    def to_dense(self, dtype=None, *, masked_grad=None):
        """A dense tensor is its own dense form (cast when dtype is given)."""
        return C.dense_to_dense(self, dtype, masked_grad=masked_grad)

    def sparse_dim(self):
        """0: a dense tensor has no sparse dims."""
        return 0

    def dense_dim(self):
        """Every dim of a dense tensor is dense."""
        return self.dim()

    def _refuse(name, expected="sparse coordinate"):
        def fn(self, *a, **k):
            raise RuntimeError(f"{name} expected {expected} tensor layout but got Strided")
        fn.__name__ = name
        fn.__doc__ = f"{name}: defined for sparse tensors; a dense tensor raises torch's RuntimeError."
        return fn

    def is_coalesced(self):
        """A dense tensor has no coalesced state (torch's RuntimeError)."""
        raise RuntimeError("is_coalesced expected sparse coordinate tensor layout but got Strided")

    def sparse_mask(self, mask):
        """The sparse tensor of mask's pattern holding this dense tensor's values there (torch's sparse_mask;
        differentiable through self)."""
        if not isinstance(mask, SparseTensor):
            raise RuntimeError("sparse_mask: expected mask to be a sparse tensor (sparse_coo or sparse_csr)")
        if tuple(mask.shape) != tuple(self.shape):
            raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(self.shape)} "
                               f"but mask has size {list(mask.shape)}")
        src = mask if mask._sl is not layouts.sparse_coo else C.coalesce(mask)
        idx, _ = C._coo_parts(src)
        picked = self[tuple(idx[d] for d in range(src._sdim))]
        return T._like(src, picked.to(mask.dtype) if picked.dtype is not mask.dtype else picked)

    def _nnz(self):
        """A dense tensor has no nnz (torch's RuntimeError)."""
        raise RuntimeError("_nnz expected sparse coordinate or sparse compressed tensor layout but got Strided")

    return {"to_sparse": to_sparse, "to_sparse_coo": to_sparse_coo, "to_sparse_csr": to_sparse_csr,
            "to_dense": to_dense, "sparse_dim": sparse_dim, "dense_dim": dense_dim, "is_coalesced": is_coalesced,
            "_nnz": _nnz, "sparse_mask": sparse_mask, "indices": _refuse("indices"), "values": _refuse("values", "sparse"),
            "_indices": _refuse("_indices"), "_values": _refuse("_values"), "coalesce": _refuse("coalesce"),
            "crow_indices": _refuse("crow_indices", "sparse row compressed"),
            "col_indices": _refuse("col_indices", "sparse row compressed")}


def install():
    for name, fn in _dense_methods().items():
        if name not in Tensor.__dict__:
            setattr(Tensor, name, fn)
    for name, fn in _sparse_methods().items():
        setattr(SparseTensor, name, fn)
    T.install()
