"""tensorlab.nn: modules, parameters, functional ops, initializers and gradient clipping, with
torch.nn's names and behaviour."""
from __future__ import annotations

from . import functional, init, utils
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .buffer import Buffer
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .dropout import Dropout
from .linear import Identity, Linear
from .loss import CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module
from .parameter import Parameter

__all__ = ["CrossEntropyLoss", "Dropout", "GELU", "Identity", "Linear", "LogSoftmax", "MSELoss", "Module", "NLLLoss",
           "Parameter", "ReLU", "Sequential", "Sigmoid", "Softmax", "Tanh", "functional", "init", "utils"]
__all__ += ["Buffer", "ModuleDict", "ModuleList", "ParameterDict", "ParameterList"]
from . import modules  # noqa: E402,F401  (torch.nn.modules.* paths)
