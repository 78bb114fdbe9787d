"""The NumPy backend: every primitive, under the names the CUDA backend uses too.
Each family lives in its own file and lists its primitives in __all__; this module re-exports them."""
from .creation import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .pool import *  # noqa: F401,F403
from .memory import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .batch_norm import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .ctc import *  # noqa: F401,F403
from .grid_sample import *  # noqa: F401,F403
from .fft import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from . import heap as _heap  # noqa: F401,E402  (glibc malloc settings: freed buffers reused, not re-faulted)
