"""Channel/space rearranging modules: PixelShuffle, PixelUnshuffle (torch.nn.modules.pixelshuffle) and
ChannelShuffle (torch.nn.modules.channelshuffle), over nn.functional."""
from __future__ import annotations

from . import functional as F
from .module import Module


class PixelShuffle(Module):
    """(*, C * r**2, H, W) -> (*, C, H * r, W * r) for upscale_factor r."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        """Apply F.pixel_shuffle."""
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        """upscale_factor=... (torch's repr)."""
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H * r, W * r) -> (*, C * r**2, H, W) for downscale_factor r (PixelShuffle's inverse)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        """Apply F.pixel_unshuffle."""
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        """downscale_factor=... (torch's repr)."""
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Split the channels (dim 1) into `groups` groups and interleave them (ShuffleNet)."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        """Apply F.channel_shuffle."""
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        """groups=... (torch's repr)."""
        return f"groups={self.groups}"
