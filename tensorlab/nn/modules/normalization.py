"""torch.nn.modules.normalization: one line per class tensorlab implements."""
from ..normalization import GroupNorm  # noqa: F401
from ..normalization import LayerNorm  # noqa: F401
from ..normalization import RMSNorm  # noqa: F401
