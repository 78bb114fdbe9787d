"""torch.nn.modules.dropout: one line per class tensorlab implements."""
from ..dropout import Dropout  # noqa: F401
from ..dropout import _DropoutNd  # noqa: F401
from ..dropout import Dropout1d  # noqa: F401
from ..dropout import Dropout2d  # noqa: F401
from ..dropout import Dropout3d  # noqa: F401
from ..dropout import AlphaDropout  # noqa: F401
from ..dropout import FeatureAlphaDropout  # noqa: F401
