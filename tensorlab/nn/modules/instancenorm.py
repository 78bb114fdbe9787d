"""torch.nn.modules.instancenorm: one line per class tensorlab implements."""
from ..instancenorm import InstanceNorm1d  # noqa: F401
from ..instancenorm import InstanceNorm2d  # noqa: F401
from ..instancenorm import InstanceNorm3d  # noqa: F401
from ..lazy import LazyInstanceNorm1d  # noqa: F401
from ..lazy import LazyInstanceNorm2d  # noqa: F401
from ..lazy import LazyInstanceNorm3d  # noqa: F401
