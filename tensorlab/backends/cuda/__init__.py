"""The CUDA backend: the primitives of backends/cpu under the same names, running our kernels
(kernels/*.cu) through a driver (driver.py's interface): CuPy's on a GPU, or the emulation driver
on the host when TENSORLAB_CUDA_EMULATION=1 (CI; docs/cuda-emulation.md). `driver` is the active
driver instance; launch.py documents how a primitive picks, packs and launches a kernel."""
from __future__ import annotations

from .active import driver  # noqa: F401  (rebinds the name from the driver.py submodule to the instance)
from .creation import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .pool import *  # noqa: F401,F403
from .memory import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .batch_norm import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .ctc import *  # noqa: F401,F403
from .grid_sample import *  # noqa: F401,F403
from .fft import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .complex import split_complex_primitives as _split_complex  # noqa: E402
_split_complex(globals())  # complex operands of the data-movement primitives: real and imaginary parts


def current_device():
    return driver.current_device()


def synchronize(device):
    """Wait for all work queued on `device` (a cuda Device; None or no index: the current one)."""
    idx = driver.current_device() if device is None or device.index is None else device.index
    driver.device_synchronize(idx)
