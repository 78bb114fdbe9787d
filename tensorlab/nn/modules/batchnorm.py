"""torch.nn.modules.batchnorm: one line per class tensorlab implements."""
from ..normalization import BatchNorm1d  # noqa: F401
from ..normalization import BatchNorm2d  # noqa: F401
from ..normalization import BatchNorm3d  # noqa: F401
from ..lazy import LazyBatchNorm1d  # noqa: F401
from ..lazy import LazyBatchNorm2d  # noqa: F401
from ..lazy import LazyBatchNorm3d  # noqa: F401
from ..sync_batchnorm import SyncBatchNorm  # noqa: F401
