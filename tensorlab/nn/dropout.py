"""Dropout modules: zero elements (Dropout, AlphaDropout) or whole channels (Dropout1d/2d/3d,
FeatureAlphaDropout) with probability p while training; evaluation is the identity."""
from __future__ import annotations

from . import functional as F
from .module import Module


class _DropoutNd(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        F._check_dropout_p(p)
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        """p and inplace (torch's repr)."""
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability p and scale the survivors by 1/(1-p) (inverted dropout)."""

    def forward(self, input):
        """Apply F.dropout while training."""
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of a (N, C, L) or (C, L) input with probability p, scale the rest by 1/(1-p)."""

    def forward(self, input):
        """Apply F.dropout1d while training."""
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of a (N, C, H, W) or (C, H, W) input with probability p."""

    def forward(self, input):
        """Apply F.dropout2d while training."""
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of a (N, C, D, H, W) or (C, D, H, W) input with probability p."""

    def forward(self, input):
        """Apply F.dropout3d while training."""
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's zero mean and unit variance (dropped elements take SELU's negative
    saturation value, then an affine correction)."""

    def forward(self, input):
        """Apply F.alpha_dropout while training (the inplace flag is ignored, as torch)."""
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout over whole channels."""

    def forward(self, input):
        """Apply F.feature_alpha_dropout while training (the inplace flag is ignored, as torch)."""
        return F.feature_alpha_dropout(input, self.p, self.training)
