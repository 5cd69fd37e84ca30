"""ember_distributed: torch.distributed for ember.

Process groups and collectives on MPI (CPU tensors, through mpi4py) and NCCL
(CUDA tensors, libnccl loaded with dlopen), DistributedDataParallel, and a
torchrun-like launcher (``python -m ember_distributed.run``, also
``python -m ember.distributed.run``).  ``ember.distributed`` re-exports this.

    import ember_distributed as dist
    dist.init_process_group()          # under mpiexec or the launcher
    dist.all_reduce(t)                 # t summed over every process
"""

from __future__ import annotations

import os
from importlib import metadata as _metadata

from ember_distributed import _mpi
from ember_distributed._store import FileStore, HashStore, PrefixStore, Store, TCPStore
from ember_distributed._types import (
    Backend,
    DistBackendError,
    DistError,
    DistNetworkError,
    DistStoreError,
    GroupMember,
    QueueEmptyError,
    ReduceOp,
    default_pg_timeout,
    group,
)
from ember_distributed._work import Work
from ember_distributed.distributed_c10d import (
    P2POp,
    ProcessGroup,
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    batch_isend_irecv,
    broadcast,
    broadcast_object_list,
    destroy_process_group,
    gather,
    gather_object,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    init_process_group,
    irecv,
    is_initialized,
    isend,
    monitored_barrier,
    new_group,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    scatter_object_list,
    send,
)

# the installed distribution's version (Note [One version], VERSION)
__version__ = _metadata.version("ember-distributed")

__all__ = [
    "Backend",
    "DistBackendError",
    "DistError",
    "DistNetworkError",
    "DistStoreError",
    "FileStore",
    "GroupMember",
    "HashStore",
    "P2POp",
    "PrefixStore",
    "ProcessGroup",
    "QueueEmptyError",
    "ReduceOp",
    "Store",
    "TCPStore",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "broadcast_object_list",
    "default_pg_timeout",
    "destroy_process_group",
    "gather",
    "gather_object",
    "get_backend",
    "get_global_rank",
    "get_group_rank",
    "get_node_local_rank",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "irecv",
    "is_available",
    "is_backend_available",
    "is_gloo_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "is_torchelastic_launched",
    "is_ucc_available",
    "is_xccl_available",
    "isend",
    "monitored_barrier",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "scatter_object_list",
    "send",
]


def is_available() -> bool:
    """True: ember.distributed is built in (backends: see is_mpi_available and
    is_nccl_available)."""
    return True


def is_mpi_available() -> bool:
    """Whether mpi4py (and so an MPI library) is installed."""
    return _mpi.is_available()


def is_nccl_available() -> bool:
    """Whether libnccl can be loaded (it is not loaded by asking)."""
    from ember_distributed import _nccl

    return _nccl.find_library() is not None


def is_gloo_available() -> bool:
    """False: ember has no gloo (backend='gloo' runs on MPI, see init_process_group)."""
    return False


def is_ucc_available() -> bool:
    """False: ember has no UCC backend."""
    return False


def is_xccl_available() -> bool:
    """False: ember has no XCCL backend."""
    return False


def is_backend_available(backend: str) -> bool:
    """Whether ``backend`` ('mpi', 'nccl') can run here."""
    name = str(backend).lower()
    if name == "mpi":
        return is_mpi_available()
    if name == "nccl":
        return is_nccl_available()
    return False


def is_torchelastic_launched() -> bool:
    """Whether this process was started by a torchrun-like launcher (ember's sets
    TORCHELASTIC_RUN_ID as torchrun does)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """The ``LOCAL_RANK`` a launcher set, else ``fallback_rank``, as PyTorch."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
        "`get_node_local_rank` to work, assuming you are not running in a multi-device "
        "context and want the code to run locally instead."
    )
