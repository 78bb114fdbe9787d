"""tl.sparse (torch.sparse's path): sparse COO and CSR tensors (SparseTensor, sparse/_tensor.py), their
construction and conversion (_convert.py) and ops (_ops.py): mm, addmm, sum, softmax, log_softmax. The
Tensor methods of sparse tensors (coalesce, to_dense, indices, values, ...) and the dense tensor's
to_sparse* methods are bound here, once, when tensorlab is imported."""
from __future__ import annotations

from ._convert import sparse_coo_tensor, sparse_csr_tensor
from ._ops import addmm, log_softmax, mm, sampled_addmm, softmax, spdiags, spmm, sum  # noqa: A004
from ._tensor import SparseTensor

__all__ = ["SparseTensor", "addmm", "check_sparse_tensor_invariants", "log_softmax", "mm", "sampled_addmm", "softmax", "spdiags",
           "sparse_coo_tensor", "sparse_csr_tensor", "sum"]


class check_sparse_tensor_invariants:
    """torch.sparse.check_sparse_tensor_invariants: a context manager (and the global switch behind
    enable()/disable()) under which sparse constructors check their indices by default."""

    _enabled = False

    def __init__(self, enable=True):
        self.state = enable

    @staticmethod
    def is_enabled():
        """Whether constructors check invariants when check_invariants is not given."""
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable():
        """Check invariants by default from now on."""
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable():
        """Stop checking invariants by default."""
        check_sparse_tensor_invariants._enabled = False

    def __enter__(self):
        self._saved = check_sparse_tensor_invariants._enabled
        check_sparse_tensor_invariants._enabled = self.state
        return self

    def __exit__(self, *exc):
        check_sparse_tensor_invariants._enabled = self._saved
