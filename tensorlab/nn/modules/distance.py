"""torch.nn.modules.distance: one line per class tensorlab implements."""
from ..distance import CosineSimilarity  # noqa: F401
from ..distance import PairwiseDistance  # noqa: F401
