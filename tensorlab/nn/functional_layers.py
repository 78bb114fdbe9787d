"""The layers' functional forms, gathered for nn.functional's one import line."""
from __future__ import annotations

from .functional_act import *  # noqa: F401,F403
from .functional_act import __all__ as _act
from .functional_attention import *  # noqa: F401,F403
from .functional_attention import __all__ as _attention
from .functional_norm import *  # noqa: F401,F403
from .functional_norm import __all__ as _norm

from .functional_more import *  # noqa: F401,F403
from .functional_more import __all__ as _more

from .functional_linear_ce import *  # noqa: F401,F403
from .functional_linear_ce import __all__ as _linear_ce

__all__ = _act + _attention + _norm + _more + _linear_ce
