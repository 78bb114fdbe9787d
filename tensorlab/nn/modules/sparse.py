"""torch.nn.modules.sparse: one line per class tensorlab implements."""
from ..sparse import Embedding  # noqa: F401
from ..conv3d_layers import EmbeddingBag  # noqa: F401
