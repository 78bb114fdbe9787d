"""torch.nn.modules.linear: one line per class tensorlab implements."""
from ..linear import Identity  # noqa: F401
from ..linear import Linear  # noqa: F401
from ..bilinear import Bilinear  # noqa: F401
from ..lazy import LazyLinear  # noqa: F401
