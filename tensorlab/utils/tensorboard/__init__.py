"""tl.utils.tensorboard (torch.utils.tensorboard): SummaryWriter, writing TensorBoard event files
through the `tensorboard` package. Importing this module works without the package; constructing
a SummaryWriter then raises an ImportError that names it (pip install tensorboard)."""
from .writer import SummaryWriter

__all__ = ["SummaryWriter"]
