"""torch._inductor.config: torch's keys (nested ones such as triton.cudagraphs too), accepted and
remembered (tensorlab/_config_module.py)."""
from .._config_module import install as _install

_install(__name__, "inductor", "torch._inductor.config")
