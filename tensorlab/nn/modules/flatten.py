"""torch.nn.modules.flatten: one line per class tensorlab implements."""
from ..activation_more import Flatten  # noqa: F401
from ..activation_more import Unflatten  # noqa: F401
