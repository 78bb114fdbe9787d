"""tensorlab.distributed: torch.distributed's core over MPI (mpi4py; CPU tensors, CUDA tensors staged
through the host, and the bootstrap) and NCCL (cupy.cuda.nccl; CUDA tensors on the current stream).

`import tensorlab.distributed` works without mpi4py: is_available() is False then, and
init_process_group says what to install. See docs/distributed.md.
"""
from __future__ import annotations

from .collectives import (P2POp, all_gather, all_gather_into_tensor, all_reduce, all_to_all_single, barrier,
                          batch_isend_irecv, broadcast, gather, irecv, isend, recv, reduce, reduce_scatter_tensor,
                          scatter, send)
from .errors import DistBackendError, DistError, DistNetworkError, DistStoreError
from .process_group import (Backend, DebugLevel, GroupMember, ProcessGroup, default_pg_timeout, destroy_process_group,
                            get_backend, get_debug_level, get_global_rank, get_group_rank, get_node_local_rank,
                            get_process_group_ranks, get_rank, get_world_size, group, init_process_group,
                            is_available, is_gloo_available, is_initialized, is_mpi_available, is_nccl_available,
                            is_ucc_available, new_group, set_debug_level, set_debug_level_from_env)
from .object_collectives import (all_gather_object, all_to_all, broadcast_object_list, gather_object,
                                 monitored_barrier, recv_object_list, reduce_scatter, scatter_object_list,
                                 send_object_list)
from .reduce_op import ReduceOp
from .work import Work

__all__ = [
    "all_gather", "all_gather_into_tensor", "all_reduce", "all_to_all_single", "barrier", "broadcast", "gather",
    "irecv", "isend", "recv", "reduce", "reduce_scatter_tensor", "scatter", "send", "P2POp", "batch_isend_irecv",
    "DistBackendError", "DistError", "DistNetworkError", "DistStoreError",
    "Backend", "DebugLevel", "GroupMember", "ProcessGroup", "default_pg_timeout", "destroy_process_group",
    "get_backend", "get_debug_level", "get_global_rank", "get_group_rank", "get_node_local_rank",
    "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group", "is_available",
    "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available", "is_ucc_available", "new_group",
    "set_debug_level", "set_debug_level_from_env", "ReduceOp", "Work",
    "all_gather_object", "all_to_all", "broadcast_object_list", "gather_object", "monitored_barrier",
    "recv_object_list", "reduce_scatter", "scatter_object_list", "send_object_list",
]
