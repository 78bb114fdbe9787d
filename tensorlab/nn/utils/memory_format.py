"""tensorlab.nn.utils.memory_format: give every convolution's weight a memory format
(channels_last for 2-D, channels_last_3d for 3-D), recursively, as torch's helpers."""
from __future__ import annotations

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, classes):
    if isinstance(module, classes):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, classes)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Re-lay the weights of every Conv2d/ConvTranspose2d in `module` in `memory_format`; returns module."""
    from ..conv import Conv2d, ConvTranspose2d
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Re-lay the weights of every Conv3d/ConvTranspose3d in `module` in `memory_format`; returns module."""
    from ..conv3d_layers import Conv3d, ConvTranspose3d
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
