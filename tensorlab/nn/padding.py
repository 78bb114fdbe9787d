"""Padding modules (torch.nn.modules.padding): Zero/Constant/Reflection/Replication/CircularPad 1d/2d/3d
over F.pad. `padding` is stored as torch stores it (an int is repeated to 2, 4 or 6 entries, a sequence is
kept as a tuple), so reprs and pickles match; the circular modules check the input rank as torch does."""
from __future__ import annotations

import collections.abc

from . import functional as F
from .module import Module


def _ntuple(padding, n):
    if isinstance(padding, collections.abc.Iterable):
        return tuple(padding)
    return (padding,) * n


class _CircularPadNd(Module):
    _ranks = ()

    def _check_input_dim(self, input):
        lo, hi = self._ranks
        if input.dim() != lo and input.dim() != hi:
            raise ValueError(f"expected {lo}D or {hi}D input (got {input.dim()}D input) ({type(self).__name__} "
                             f"pads the last {lo - 1} dimension(s) of an unbatched or batched input; input shape "
                             f"{tuple(input.shape)})")

    def forward(self, input):
        """Wrap the input around (F.pad mode='circular') after torch's rank check."""
        self._check_input_dim(input)
        return F.pad(input, self.padding, "circular")

    def extra_repr(self):
        """The padding tuple (torch's repr)."""
        return f"{self.padding}"


class CircularPad1d(_CircularPadNd):
    """Circular padding of the last dimension of a 2-D or 3-D input: padding int or (left, right)."""
    _ranks = (2, 3)

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2)


class CircularPad2d(_CircularPadNd):
    """Circular padding of the last two dimensions of a 3-D or 4-D input: padding int or
    (left, right, top, bottom)."""
    _ranks = (3, 4)

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 4)


class CircularPad3d(_CircularPadNd):
    """Circular padding of the last three dimensions of a 4-D or 5-D input: padding int or a 6-tuple."""
    _ranks = (4, 5)

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 6)


class _ConstantPadNd(Module):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, input):
        """Pad with self.value (F.pad mode='constant')."""
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        """padding and value (torch's repr)."""
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dimension with a constant value: padding int or (left, right)."""

    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _ntuple(padding, 2)


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dimensions with a constant value: padding int or (left, right, top, bottom)."""

    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _ntuple(padding, 4)


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dimensions with a constant value: padding int or a 6-tuple."""

    def __init__(self, padding, value):
        super().__init__(value)
        self.padding = _ntuple(padding, 6)


class _ReflectionPadNd(Module):
    def forward(self, input):
        """Pad with the reflection of the input about its edges (F.pad mode='reflect')."""
        return F.pad(input, self.padding, "reflect")

    def extra_repr(self):
        """The padding tuple (torch's repr)."""
        return f"{self.padding}"


class ReflectionPad1d(_ReflectionPadNd):
    """Reflection padding of the last dimension: padding int or (left, right)."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2)


class ReflectionPad2d(_ReflectionPadNd):
    """Reflection padding of the last two dimensions: padding int or (left, right, top, bottom)."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 4)


class ReflectionPad3d(_ReflectionPadNd):
    """Reflection padding of the last three dimensions: padding int or a 6-tuple."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 6)


class _ReplicationPadNd(Module):
    def forward(self, input):
        """Pad by repeating the edge values (F.pad mode='replicate')."""
        return F.pad(input, self.padding, "replicate")

    def extra_repr(self):
        """The padding tuple (torch's repr)."""
        return f"{self.padding}"


class ReplicationPad1d(_ReplicationPadNd):
    """Replication padding of the last dimension: padding int or (left, right)."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2)


class ReplicationPad2d(_ReplicationPadNd):
    """Replication padding of the last two dimensions: padding int or (left, right, top, bottom)."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 4)


class ReplicationPad3d(_ReplicationPadNd):
    """Replication padding of the last three dimensions: padding int or a 6-tuple."""

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 6)


class ZeroPad1d(ConstantPad1d):
    """Zero padding of the last dimension: padding int or (left, right)."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        """The padding tuple (torch's repr)."""
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Zero padding of the last two dimensions: padding int or (left, right, top, bottom)."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        """The padding tuple (torch's repr)."""
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Zero padding of the last three dimensions: padding int or a 6-tuple."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        """The padding tuple (torch's repr)."""
        return f"{self.padding}"
