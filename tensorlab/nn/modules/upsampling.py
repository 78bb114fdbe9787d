"""torch.nn.modules.upsampling: one line per class tensorlab implements."""
from ..upsampling import Upsample  # noqa: F401
from ..upsampling import UpsamplingBilinear2d  # noqa: F401
from ..upsampling import UpsamplingNearest2d  # noqa: F401
