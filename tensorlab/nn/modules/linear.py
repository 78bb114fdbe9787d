"""torch.nn.modules.linear: one line per class tensorlab implements."""
from ..linear import Identity  # noqa: F401
from ..linear import Linear  # noqa: F401
from ..transformer import NonDynamicallyQuantizableLinear  # noqa: F401  (MultiheadAttention.out_proj's class)
