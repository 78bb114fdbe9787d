"""torch.nn.modules.pixelshuffle: one line per class tensorlab implements."""
from ..shuffle_layers import PixelShuffle  # noqa: F401
from ..shuffle_layers import PixelUnshuffle  # noqa: F401
