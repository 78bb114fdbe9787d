"""tensorlab.nn: modules, parameters, functional ops, initializers and gradient clipping, with
torch.nn's names and behaviour."""
from __future__ import annotations

from . import functional, init, utils
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .container import Sequential
from .dropout import Dropout
from .linear import Identity, Linear
from .loss import CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module
from .parameter import Parameter

__all__ = ["CrossEntropyLoss", "Dropout", "GELU", "Identity", "Linear", "LogSoftmax", "MSELoss", "Module", "NLLLoss",
           "Parameter", "ReLU", "Sequential", "Sigmoid", "Softmax", "Tanh", "functional", "init", "utils"]

from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, Fold, Unfold  # noqa: E402
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,  # noqa: E402
                      AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d)
__all__ += ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AvgPool1d",
            "AvgPool2d", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "Fold", "MaxPool1d", "MaxPool2d",
            "Unfold"]
from .upsampling import Upsample  # noqa: E402
__all__ += ["Upsample"]
