"""tl.signal: torch.signal's windows (tl.signal.windows)."""
from . import windows  # noqa: F401
