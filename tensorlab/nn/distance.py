"""Distance modules (torch.nn.modules.distance): PairwiseDistance and CosineSimilarity over
nn.functional. As torch, PairwiseDistance stores its `p` as `norm` and has no extra_repr."""
from __future__ import annotations

from . import functional as F
from .module import Module


class PairwiseDistance(Module):
    """The p-norm of x1 - x2 + eps along the last dimension."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        """Apply F.pairwise_distance with the module's norm, eps and keepdim."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """x1 . x2 / max(|x1| |x2|, eps) along dim."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        """Apply F.cosine_similarity along self.dim."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
