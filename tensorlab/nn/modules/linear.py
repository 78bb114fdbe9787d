"""torch.nn.modules.linear: one line per class tensorlab implements."""
from ..linear import Identity  # noqa: F401
from ..linear import Linear  # noqa: F401
from ..bilinear import Bilinear  # noqa: F401
from ..lazy import LazyLinear  # noqa: F401


def __getattr__(name):
    """torch.nn.modules.linear.NonDynamicallyQuantizableLinear (MultiheadAttention.out_proj's class),
    which torch.nn.modules does not re-export: looked up here, so the package's re-export loop skips it."""
    if name == "NonDynamicallyQuantizableLinear":
        from ..transformer import NonDynamicallyQuantizableLinear
        return NonDynamicallyQuantizableLinear
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
