"""torch.nn.modules.adaptive: one line per class tensorlab implements."""
from ..adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401
from ..adaptive import _ASMoutput  # noqa: F401
