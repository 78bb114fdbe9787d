"""torch.nn.modules.upsampling: one line per class tensorlab implements."""
from ..upsampling import Upsample  # noqa: F401
