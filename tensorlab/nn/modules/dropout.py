"""torch.nn.modules.dropout: one line per class tensorlab implements."""
from ..dropout import Dropout  # noqa: F401
