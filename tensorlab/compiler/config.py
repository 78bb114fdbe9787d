"""torch.compiler.config: torch's keys, accepted and remembered (tensorlab/_config_module.py)."""
from .._config_module import install as _install

_install(__name__, "compiler", "torch.compiler.config")
