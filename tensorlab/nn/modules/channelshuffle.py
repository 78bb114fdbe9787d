"""torch.nn.modules.channelshuffle: one line per class tensorlab implements."""
from ..shuffle_layers import ChannelShuffle  # noqa: F401
