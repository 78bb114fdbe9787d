"""torch.nn.modules.fold: one line per class tensorlab implements."""
from ..conv import Fold  # noqa: F401
from ..conv import Unfold  # noqa: F401
