"""torch.nn.modules.conv: one line per class tensorlab implements."""
from ..conv import Conv1d  # noqa: F401
from ..conv import Conv2d  # noqa: F401
from ..conv import ConvTranspose1d  # noqa: F401
from ..conv import ConvTranspose2d  # noqa: F401
from ..conv3d_layers import Conv3d  # noqa: F401
from ..conv3d_layers import ConvTranspose3d  # noqa: F401
