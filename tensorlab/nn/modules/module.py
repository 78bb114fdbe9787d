"""torch.nn.modules.module: one line per class tensorlab implements."""
from ..hooks import RemovableHandle  # noqa: F401  (torch imports it here too)
from ..module import Module  # noqa: F401
from ..module import _IncompatibleKeys  # noqa: F401
from ..module import _addindent  # noqa: F401
