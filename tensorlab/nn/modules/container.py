"""torch.nn.modules.container: one line per class tensorlab implements."""
from ..container import ModuleDict  # noqa: F401
from ..container import ModuleList  # noqa: F401
from ..container import ParameterDict  # noqa: F401
from ..container import ParameterList  # noqa: F401
from ..container import Sequential  # noqa: F401
from ..container import Container  # noqa: F401
