"""tensorlab._inductor (torch._inductor): only its config, which scripts set before torch.compile;
tensorlab has no graph compiler (tl.compile runs eagerly)."""
from . import config  # noqa: F401
