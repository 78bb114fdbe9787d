"""torch.nn.modules.lazy: LazyModuleMixin."""
from ..lazy import LazyModuleMixin  # noqa: F401
