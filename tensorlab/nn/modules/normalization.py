"""torch.nn.modules.normalization: one line per class tensorlab implements."""
from ..normalization import GroupNorm  # noqa: F401
from ..normalization import LayerNorm  # noqa: F401
from ..normalization import RMSNorm  # noqa: F401
from ..local_response_norm import CrossMapLRN2d  # noqa: F401
from ..local_response_norm import LocalResponseNorm  # noqa: F401
