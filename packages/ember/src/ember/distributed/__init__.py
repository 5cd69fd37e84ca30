"""ember.distributed (torch.distributed) for a single process.

ember has no collective backend (no gloo, NCCL or MPI), so ``is_available()``
is False and scripts take their non-distributed path: the usual
``if dist.is_available() and dist.is_initialized():`` branches are skipped.
Everything else answers as PyTorch does when no process group exists:
``is_initialized()`` is False, and ``get_rank``/``get_world_size``/collectives
raise PyTorch's ``ValueError`` ("Default process group has not been
initialized ...").  ``init_process_group`` raises a ``RuntimeError`` saying
ember has no distributed backend, rather than pretending to join a group.
"""

import enum
import os
from datetime import timedelta

__all__ = [
    "Backend",
    "DistBackendError",
    "DistError",
    "DistNetworkError",
    "DistStoreError",
    "QueueEmptyError",
    "default_pg_timeout",
    "get_node_local_rank",
    "GroupMember",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "gather",
    "gather_object",
    "get_backend",
    "get_global_rank",
    "get_group_rank",
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

# PyTorch's text, so scripts that match on it (and readers who search it) find it.
_NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)
_NO_BACKEND = (
    "ember.distributed: ember has no collective communication backend (no gloo, NCCL or MPI), "
    "so init_process_group({}) cannot create a process group. Run the script without a "
    "launcher (one process); ember.distributed.is_available() is False so scripts can take "
    "their non-distributed path."
)


# The exception types PyTorch's collectives raise (scripts catch them by name).
class DistError(RuntimeError):
    """An error in the distributed library."""


class DistBackendError(DistError):
    """An error in a collective backend."""


class DistNetworkError(DistError):
    """A network error between processes."""


class DistStoreError(DistError):
    """An error in the key-value store processes rendezvous through."""


class QueueEmptyError(DistStoreError):
    """A store queue had nothing to pop."""


default_pg_timeout = timedelta(minutes=30)


def is_available():
    """False: ember has no collective backend (see the module docstring)."""
    return False


def is_initialized():
    """Whether the default process group exists: never, in ember."""
    return False


def is_torchelastic_launched():
    """Whether this process was started by torchelastic (``torchrun``), read from
    the environment as PyTorch does."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def get_node_local_rank(fallback_rank=None):
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


def is_gloo_available():
    return False


def is_nccl_available():
    return False


def is_mpi_available():
    return False


def is_ucc_available():
    return False


def is_xccl_available():
    return False


def is_backend_available(backend):
    return False


class Backend(str):
    """A backend name (``Backend("gloo") == "gloo"``), as in PyTorch; none is
    usable in ember."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {name!r}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            value = name.lower()
        return str.__new__(cls, value)


class ReduceOp:
    """Reduction operations for collectives (``ReduceOp.SUM`` ...)."""

    class RedOpType(enum.Enum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8
        UNUSED = 9

        def __repr__(self):
            return f"<RedOpType.{self.name}: {self.value}>"

        def __str__(self):
            return f"RedOpType.{self.name}"

    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM


class ProcessGroup:
    """The type of a process group (none can be created in ember)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(_NO_BACKEND.format("") + " (ProcessGroup)")


class Work:
    """The handle of an asynchronous collective (none runs in ember)."""


class GroupMember:
    """``GroupMember.WORLD`` is the default group: None until one is initialised,
    which in ember is never.  ``NON_GROUP_MEMBER`` marks ranks outside a group."""

    WORLD = None
    NON_GROUP_MEMBER = -100


class group:
    WORLD = None


def _default_group():
    raise ValueError(_NOT_INITIALIZED)


def init_process_group(
    backend=None,
    init_method=None,
    timeout=None,
    world_size=-1,
    rank=-1,
    store=None,
    group_name="",
    pg_options=None,
    device_id=None,
):
    """Raises RuntimeError: ember cannot create a process group."""
    shown = f"backend={backend!r}" if backend is not None else ""
    raise RuntimeError(_NO_BACKEND.format(shown))


def destroy_process_group(group=None):
    # PyTorch asserts that a group exists to destroy.
    raise AssertionError("Process group cannot be None")


def new_group(
    ranks=None,
    timeout=None,
    backend=None,
    pg_options=None,
    use_local_synchronization=False,
    group_desc=None,
    device_id=None,
):
    _default_group()


def get_rank(group=None):
    """The caller's rank: raises ValueError without a process group (always, in ember)."""
    _default_group()


def get_world_size(group=None):
    """The number of processes: raises ValueError without a process group."""
    _default_group()


def get_backend(group=None):
    _default_group()


def get_global_rank(group, group_rank):
    _default_group()


def get_group_rank(group, global_rank):
    _default_group()


def get_process_group_ranks(group):
    _default_group()


def _collective(name, doc):
    def fn(*args, **kwargs):
        _default_group()

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + " Raises ValueError: no process group exists in ember."
    return fn


all_reduce = _collective("all_reduce", "Reduce ``tensor`` across all processes in place.")
broadcast = _collective("broadcast", "Send ``tensor`` from ``src`` to every process.")
reduce = _collective("reduce", "Reduce ``tensor`` onto ``dst``.")
all_gather = _collective("all_gather", "Gather ``tensor`` from every process into a list.")
all_gather_into_tensor = _collective("all_gather_into_tensor", "Gather into one tensor.")
all_gather_object = _collective("all_gather_object", "Gather picklable objects.")
gather = _collective("gather", "Gather tensors onto ``dst``.")
gather_object = _collective("gather_object", "Gather picklable objects onto ``dst``.")
scatter = _collective("scatter", "Scatter a list of tensors from ``src``.")
scatter_object_list = _collective("scatter_object_list", "Scatter picklable objects.")
reduce_scatter = _collective("reduce_scatter", "Reduce, then scatter a list of tensors.")
reduce_scatter_tensor = _collective("reduce_scatter_tensor", "Reduce, then scatter a tensor.")
all_to_all = _collective("all_to_all", "Exchange lists of tensors between all processes.")
all_to_all_single = _collective("all_to_all_single", "Exchange one tensor's slices.")
broadcast_object_list = _collective("broadcast_object_list", "Broadcast picklable objects.")
barrier = _collective("barrier", "Wait for every process.")
monitored_barrier = _collective("monitored_barrier", "A barrier that reports stuck ranks.")
send = _collective("send", "Send ``tensor`` to ``dst``.")
recv = _collective("recv", "Receive into ``tensor`` from ``src``.")
isend = _collective("isend", "Send ``tensor`` to ``dst`` asynchronously.")
irecv = _collective("irecv", "Receive into ``tensor`` asynchronously.")
