"""F.embedding(sparse=True): the lookup as an autograd Function whose gradient for the weight is a sparse
COO tensor of the looked-up rows (uncoalesced: one entry per lookup, the padding row's left out), as
torch's embedding_sparse_backward."""
from __future__ import annotations

from .. import layouts
from ..autograd.function import Function
from ._tensor import SparseTensor


class _SparseEmbedding(Function):
    @staticmethod
    def forward(ctx, weight, flat, padding_idx, scale_grad_by_freq):
        ctx.flat, ctx.padding_idx, ctx.scale = flat, padding_idx, scale_grad_by_freq
        ctx.shape = tuple(weight.shape)
        return weight.index_select(0, flat)

    @staticmethod
    def backward(ctx, grad):
        if ctx.scale:
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
        flat = ctx.flat
        if ctx.padding_idx is not None:
            keep = (flat != ctx.padding_idx).nonzero().reshape(-1)
            flat = flat.index_select(0, keep)
            grad = grad.index_select(0, keep)
        g = SparseTensor._build(layouts.sparse_coo, ctx.shape, grad.contiguous(), flat.reshape(1, -1),
                                coalesced=flat.shape[0] <= 1, sparse_dim=1)
        return g, None, None, None


def embedding(flat, weight, padding_idx, scale_grad_by_freq):
    """weight's rows at the int64 indices `flat` ((N,) -> (N, D)); weight's gradient sparse."""
    return _SparseEmbedding.apply(weight, flat, padding_idx, scale_grad_by_freq)
