"""torch.onnx.errors: the exporter's exception classes (torch's hierarchy: every one is a RuntimeError)."""
from __future__ import annotations

__all__ = ["OnnxExporterError", "OnnxExporterWarning", "SymbolicValueError", "UnsupportedOperatorError"]


class OnnxExporterWarning(UserWarning):
    """Warnings the ONNX exporter gives (a traced shape that stays fixed, a mode it changed)."""


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op the exporter has no ONNX mapping for, at the requested opset.

    `supported_version` is the lowest opset where a mapping exists (None: no opset has one)."""

    def __init__(self, name, version, supported_version, detail=""):
        if supported_version is not None:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not supported. "
                   f"Support for this operator was added in version {supported_version}, try exporting with "
                   f"opset_version={supported_version} or later.")
        else:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not supported: "
                   f"tensorlab.onnx has no ONNX mapping for it. Express the model with supported ops (see "
                   f"tensorlab.onnx.supported_ops()) or compute this part outside the exported model.")
        if detail:
            msg += f" ({detail})"
        super().__init__(msg)
        self.name, self.version, self.supported_version = name, version, supported_version


class SymbolicValueError(OnnxExporterError):
    """A value the exporter cannot express in the ONNX graph (a data-dependent shape, an in-place
    write through a view of a graph value, ...)."""

    def __init__(self, msg, value=None):
        super().__init__(msg)
        self.value = value
