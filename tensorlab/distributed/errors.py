"""torch.distributed's exception types (all RuntimeError subclasses, as torch's)."""
from __future__ import annotations


class DistError(RuntimeError):
    """Base of the errors tensorlab.distributed raises for communication failures."""


class DistBackendError(DistError):
    """A collective failed or timed out in the communication engine (MPI or NCCL)."""


class DistNetworkError(DistError):
    """A network-level failure."""


class DistStoreError(DistError):
    """The rendezvous failed: ranks did not all join init_process_group within its timeout."""
