"""torch.ao.quantization's QuantStub and DeQuantStub: the markers a float model places where a quantized
model will quantize and dequantize. In a float model (before torch's prepare/convert swap them) they
are identity modules, which is all they are here: tensorlab has no quantized tensors, so prepare,
convert, observers and qconfigs are not here (under the compat runner they report "tensorlab does not
implement torch.ao.quantization.X yet")."""
from __future__ import annotations

from ...nn.module import Module

__all__ = ["QuantStub", "DeQuantStub"]


class _Stub(Module):
    """An identity module with the optional qconfig torch's stubs carry."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantStub(_Stub):
    """Where a quantized model would quantize its input: identity in a float model."""


class DeQuantStub(_Stub):
    """Where a quantized model would dequantize: identity in a float model."""
