"""torch.nn.modules.transformer: one line per class tensorlab implements."""
from ..transformer import Transformer  # noqa: F401
from ..transformer import TransformerEncoder  # noqa: F401
from ..transformer import TransformerDecoder  # noqa: F401
from ..transformer import TransformerEncoderLayer  # noqa: F401
from ..transformer import TransformerDecoderLayer  # noqa: F401
