"""Dropout: zeroes elements with probability p while training and scales the survivors by
1/(1-p) (inverted dropout), so evaluation is the identity."""
from __future__ import annotations

from . import functional as F
from .module import Module


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        F._check_dropout_p(p)
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"
