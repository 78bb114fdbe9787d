"""torch.nn.modules.loss: one line per class tensorlab implements."""
from ..loss import CrossEntropyLoss  # noqa: F401
from ..loss import MSELoss  # noqa: F401
from ..loss import NLLLoss  # noqa: F401
from ..loss import _Loss  # noqa: F401
from ..loss import _WeightedLoss  # noqa: F401
