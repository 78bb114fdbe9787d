"""tensorlab.optim: torch.optim's Optimizer base class, SGD, Adam, AdamW, Adadelta, Adagrad,
RMSprop, NAdam, RAdam, and the learning-rate schedulers (tensorlab.optim.lr_scheduler)."""
from __future__ import annotations

from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD
from .adadelta import Adadelta
from .adagrad import Adagrad
from .nadam import NAdam
from .radam import RAdam
from .rmsprop import RMSprop
from . import lr_scheduler
from .adamax import Adamax  # issue 34: Adamax, ASGD, Rprop, swa_utils
from .asgd import ASGD
from .rprop import Rprop
from . import swa_utils
from .sparse_adam import SparseAdam  # issue 34: sparse gradients (tensorlab/sparse)
from .lbfgs import LBFGS  # issue 34: LBFGS, Adafactor, Muon
from .adafactor import Adafactor
from .muon import Muon
from ._swap import swap_in_optimizer_params_and_state

__all__ = ["Adam", "AdamW", "Optimizer", "SGD", "Adadelta", "Adagrad", "NAdam", "RAdam", "RMSprop", "lr_scheduler",
           "Adamax", "ASGD", "Rprop", "swa_utils", "SparseAdam",
           "LBFGS", "Adafactor", "Muon", "swap_in_optimizer_params_and_state"]
