"""torch.nn.modules.activation: one line per class tensorlab implements."""
from ..activation import GELU  # noqa: F401
from ..activation import LogSoftmax  # noqa: F401
from ..activation import ReLU  # noqa: F401
from ..activation import Sigmoid  # noqa: F401
from ..activation import Softmax  # noqa: F401
from ..activation import Tanh  # noqa: F401
