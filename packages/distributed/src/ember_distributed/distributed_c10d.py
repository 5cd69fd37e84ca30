"""torch.distributed's process groups and collectives (``distributed_c10d``).

A ProcessGroup holds one backend per device type: MPI for CPU tensors
(Note [MPI backend] in _mpi.py) and NCCL for CUDA tensors (_nccl.py, created
at the group's first CUDA collective).  The functions here check arguments as
PyTorch does, map global ranks to group ranks, lay lists of tensors out in one
contiguous buffer where MPI needs one, and hand the work to the backend.

Note [Forming the world]
- Under an MPI launcher (``mpiexec -n N``, ``ember.distributed.run``) the
  MPI world is the process group: ranks and size come from MPI where RANK and
  WORLD_SIZE are not set, and a RANK that is set must be a permutation of them.
- Processes of several MPI jobs (one ``mpiexec`` per machine, as the launcher
  does with ``--nnodes``; or processes started without a launcher) meet
  through the rendezvous store (env://, tcp://, file://): global rank 0 opens
  an MPI port and publishes its name; the others connect job by job
  (MPI_Comm_connect/accept) and the merged communicator is ordered by rank.
  MPICH 5.0's processes started without mpiexec (singletons) cannot connect
  (pmodels/mpich#7805): start them with a launcher, or use mpich<5.
"""

from __future__ import annotations

import io
import os
import pickle
import sys
import time
import urllib.parse
import warnings
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import ember_autograd
import ember_core as ec
from ember_distributed import _mpi, _types
from ember_distributed._store import FileStore, PrefixStore, TCPStore
from ember_distributed._types import (
    NOT_INITIALIZED,
    Backend,
    DistBackendError,
    GroupMember,
    ReduceOp,
    default_pg_timeout,
)
from ember_distributed._work import CompletedWork, Work

if TYPE_CHECKING:
    from typing import TypeAlias

    from typing_extensions import TypeIs

    from ember_distributed._store import Store

    Tensor: TypeAlias = ec.Tensor
    # a group argument: a ProcessGroup, None (the default group), or
    # GroupMember.NON_GROUP_MEMBER, which new_group returns on the ranks outside
    Group: TypeAlias = "ProcessGroup | int | None"
    RedOp: TypeAlias = ReduceOp.RedOpType

__all__ = [
    "ProcessGroup",
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
    "init_process_group",
    "irecv",
    "is_initialized",
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


class _World:
    default: ProcessGroup | None = None  # the default ProcessGroup
    groups: list[ProcessGroup] = []  # every group made since init (destroyed with the default)
    store = None
    count = 0  # groups made so far (names)
    debug = False  # TORCH_DISTRIBUTED_DEBUG=DETAIL: check collectives agree across ranks
    excepthook: Any = None


def _seconds(timeout: timedelta | None) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    raise TypeError(f"timeout must be a datetime.timedelta, got {type(timeout).__name__}")


# ------------------------------------------------------------------ backends


def _parse_backend(backend: str | None) -> dict[str, str]:
    """{device type: backend name} for a backend argument, as PyTorch reads
    ``"cpu:gloo,cuda:nccl"``.  ``None``/``"auto"``: MPI for CPU, NCCL for CUDA."""
    if backend is None or str(backend).lower() in ("auto", "undefined"):
        return {"cpu": "mpi", "cuda": "nccl"}
    text = str(backend).lower()
    if ":" in text:
        out = {}
        for part in text.split(","):
            dev, _, name = part.partition(":")
            out[dev.strip()] = _backend_name(name.strip(), backend)
        return out
    name = _backend_name(text, backend)
    return {"cuda": "nccl"} if name == "nccl" else {"cpu": "mpi"}


def _backend_name(name: str, given: str | None) -> str:
    if name == "gloo":
        warnings.warn(
            "ember.distributed has no gloo backend: backend 'gloo' runs on MPI "
            "(get_backend() reports 'mpi')",
            UserWarning,
            stacklevel=4,
        )
        return "mpi"
    if name not in ("mpi", "nccl"):
        raise ValueError(
            f"init_process_group: unknown backend {given!r}; ember runs 'mpi' (CPU tensors), "
            "'nccl' (CUDA tensors) or None/'auto' (both)"
        )
    return name


class ProcessGroup:
    """A group of processes (PyTorch's ``ProcessGroup``): ``rank()``, ``size()``,
    and the backends its collectives run on."""

    def __init__(
        self,
        ranks: Iterable[int],
        rank: int,
        comm: Any,
        timeout: float,
        backends: dict[str, str],
        name: str,
        store: Store | None,
    ) -> None:
        self._ranks = list(ranks)  # global ranks, in group-rank order
        self._rank = rank
        self._size = len(self._ranks)
        self._timeout = timeout
        self._backends = backends  # {"cpu": "mpi", "cuda": "nccl"}
        self.group_name = name
        self._store = store
        self._comm = comm
        self._mpi: Any = None  # the ProcessGroupMPI, if the group has a CPU backend
        self._nccl: dict[int, Any] = {}  # device index -> ProcessGroupNCCL
        self._store_factory: Callable[[], Store] | None = None
        if comm is not None:
            self._mpi = _mpi.ProcessGroupMPI(comm, timeout, self._describe())
        self._cpu_mpi = self._mpi is not None and backends.get("cpu") == "mpi"

    def _describe(self) -> str:
        return f"rank {self._rank} of process group {self.group_name!r} (size {self._size})"

    def rank(self) -> int:
        """This process's rank in the group."""
        return self._rank

    def size(self) -> int:
        """The number of processes in the group."""
        return self._size

    def name(self) -> str:
        """The backend's name ('mpi', 'nccl', or 'cpu:mpi,cuda:nccl')."""
        return self._backend_name()

    def _backend_name(self) -> str:
        b = self._backends
        if len(b) == 1:
            return next(iter(b.values()))
        return ",".join(f"{k}:{v}" for k, v in sorted(b.items()))

    @property
    def group_desc(self) -> str:
        return self.group_name

    def backend_for(self, tensor: Tensor, what: str) -> Any:
        """The backend (ProcessGroupMPI or ProcessGroupNCCL) for ``tensor``'s device."""
        dev = tensor.device.type
        if dev == "cpu" and self._cpu_mpi:  # the common case first
            return self._mpi
        name = self._backends.get(dev)
        if name is None:
            raise RuntimeError(
                f"{what}: No backend type associated with device type {dev} (this process "
                f"group runs {self._backend_name()!r}; init_process_group(backend=None) runs "
                "MPI for CPU and NCCL for CUDA tensors)"
            )
        if name == "mpi":
            if self._mpi is None:
                raise RuntimeError(f"{what}: this process group has no MPI communicator")
            return self._mpi
        index = tensor.device.index or 0
        pg = self._nccl.get(index)
        if pg is None:
            from ember_distributed import _nccl

            pg = self._nccl[index] = _nccl.ProcessGroupNCCL(self, index)
        return pg

    def _shutdown(self) -> None:
        for pg in self._nccl.values():
            pg.shutdown()
        self._nccl = {}
        if self._mpi is not None:
            self._mpi.shutdown()

    def __repr__(self) -> str:
        return (
            f"<ember.distributed.ProcessGroup {self.group_name!r} rank {self._rank} of "
            f"{self._size} ({self._backend_name()})>"
        )


# ------------------------------------------------------------------ rendezvous


def _env_int(name: str, method: str) -> int:
    """The integer in environment variable ``name``; -1 where it is not set."""
    value = os.environ.get(name)
    if value is None:
        return -1
    try:
        return int(value)
    except ValueError:
        raise ValueError(
            f"Error initializing torch.distributed using {method} rendezvous: environment "
            f"variable {name} is not an integer: {value!r}"
        ) from None


def _rendezvous(
    init_method: str, rank: int, world_size: int, timeout: float
) -> tuple[int, int, Callable[[], Store]]:
    """(rank, world_size, make_store) from the init method (Note [Forming the world])."""
    url = urllib.parse.urlparse(init_method)
    query = dict(urllib.parse.parse_qsl(url.query))
    if rank < 0 and "rank" in query:
        rank = int(query["rank"])
    if world_size < 0 and "world_size" in query:
        world_size = int(query["world_size"])
    if url.scheme == "env":
        if rank < 0:
            rank = _env_int("RANK", "env://")
        if world_size < 0:
            world_size = _env_int("WORLD_SIZE", "env://")
    if (rank < 0 or world_size < 0) and _mpi.is_available() and _mpi.launched_by_mpi():
        W = _mpi.mpi().COMM_WORLD
        if rank < 0:
            rank = W.Get_rank()
        if world_size < 0:
            world_size = W.Get_size()
    for name, value in (("RANK", rank), ("WORLD_SIZE", world_size)):
        if value < 0:
            if url.scheme == "env":
                raise ValueError(
                    f"Error initializing torch.distributed using env:// rendezvous: environment "
                    f"variable {name} expected, but not set (or start the processes with "
                    "mpiexec or python -m ember.distributed.run)"
                )
            raise ValueError(
                f"init_process_group({init_method!r}): {name.lower()} was not given (pass "
                f"{'rank' if name == 'RANK' else 'world_size'}= or start the processes with "
                "mpiexec or python -m ember.distributed.run)"
            )
    if rank >= world_size:
        raise ValueError(f"init_process_group: rank {rank} is not below world_size {world_size}")

    def make_store() -> Store:
        if url.scheme == "env":
            addr = os.environ.get("MASTER_ADDR")
            port = os.environ.get("MASTER_PORT")
            for name, value in (("MASTER_ADDR", addr), ("MASTER_PORT", port)):
                if value is None:
                    raise ValueError(
                        "Error initializing torch.distributed using env:// rendezvous: "
                        f"environment variable {name} expected, but not set"
                    )
            assert addr is not None and port is not None  # checked above
            return TCPStore(addr, int(port), world_size, rank == 0, timedelta(seconds=timeout))
        if url.scheme == "tcp":
            if not url.hostname or not url.port:
                raise ValueError(f"init_process_group: tcp:// needs host:port, got {init_method!r}")
            return TCPStore(
                url.hostname, url.port, world_size, rank == 0, timedelta(seconds=timeout)
            )
        if url.scheme == "file":
            store = FileStore(url.path, world_size)
            store.set_timeout(timedelta(seconds=timeout))
            return store
        raise ValueError(
            f"init_process_group: unsupported init_method {init_method!r} (env://, tcp://host:port "
            "or file:///path)"
        )

    return rank, world_size, make_store


def _wait_count(store: Store, key: str, value: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while store.add(key, 0) < value:
        if time.monotonic() > deadline:
            raise _types.DistStoreError(
                f"init_process_group: only {store.add(key, 0)} of {value} processes arrived "
                f"within {timeout:g} s"
            )
        time.sleep(0.005)


def _form_world(rank: int, world_size: int, get_store: Callable[[], Store], timeout: float) -> Any:
    """The MPI communicator of the whole world, ordered by rank (Note [Forming the world])."""
    MPI = _mpi.mpi()
    W = MPI.COMM_WORLD
    if W.Get_size() == world_size:
        ranks = W.allgather(rank)
        if sorted(ranks) != list(range(world_size)):
            raise ValueError(
                f"init_process_group: the {world_size} processes gave ranks {ranks}, which are "
                f"not 0..{world_size - 1} each once"
            )
        return W.Split(0, rank)
    if W.Get_size() > world_size:
        raise ValueError(
            f"init_process_group: world_size={world_size}, but MPI started {W.Get_size()} "
            "processes together (mpiexec -n); they must agree"
        )
    store = PrefixStore("ember/mpi", get_store())
    lranks = W.allgather(rank)
    if rank == min(lranks):
        store.add("jobs", 1)
        store.add("procs", W.Get_size())
    try:
        if 0 in lranks:
            root = lranks.index(0)
            port = remaining = None
            if rank == 0:
                _wait_count(store, "procs", world_size, timeout)
                remaining = store.add("jobs", 0) - 1
                port = MPI.Open_port()
                store.set("port", port)
            port, remaining = W.bcast((port, remaining), root=root)
            M = W
        else:
            port = store.get("port").decode()
            inter = W.Connect(port, root=0)
            M = inter.Merge(high=True)
            inter.Free()
            root = M.allgather(rank).index(0)
            remaining = M.bcast(None, root=root)
        while remaining > 0:
            inter = M.Accept(port, root=root)
            M = inter.Merge(high=False)
            inter.Free()
            root = M.allgather(rank).index(0)
            remaining = M.bcast(remaining - 1 if M.Get_rank() == root else None, root=root)
        if rank == 0:
            MPI.Close_port(port)
    except MPI.Exception as e:
        hint = ""
        if "MPICH Version:      5.0" in MPI.Get_library_version() and not _mpi.launched_by_mpi():
            hint = (
                " MPICH 5.0 cannot connect processes started without mpiexec "
                "(pmodels/mpich#7805): start them with python -m ember.distributed.run or mpiexec, "
                "or install mpich<5."
            )
        raise DistBackendError(
            f"init_process_group: joining {world_size} processes from separate MPI jobs through "
            f"MPI_Comm_connect/accept failed: {e.Get_error_string().splitlines()[-1]}.{hint}"
        ) from None
    return M.Split(0, rank)


def _install_excepthook(comm: Any) -> None:
    """An uncaught exception in one process aborts the whole MPI job (after its
    traceback is printed), so the others stop at once instead of waiting in a
    collective until their timeout (as ``python -m mpi4py`` does)."""
    if _World.excepthook is not None or comm.Get_size() == 1:
        return
    previous = sys.excepthook

    def hook(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
        previous(exc_type, exc, tb)
        if _World.default is not None and not issubclass(exc_type, KeyboardInterrupt):
            sys.stdout.flush()
            sys.stderr.flush()
            comm.Abort(1)

    _World.excepthook = previous
    sys.excepthook = hook


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Store | None = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: ec.device | int | None = None,
) -> None:
    """Join the default process group (PyTorch's ``init_process_group``).

    ``backend``: ``"mpi"`` (CPU tensors), ``"nccl"`` (CUDA tensors), or ``None``
    for both; ``init_method``: ``env://`` (default: RANK, WORLD_SIZE, MASTER_ADDR,
    MASTER_PORT, or the MPI launcher's ranks), ``tcp://host:port`` or
    ``file:///path``; ``timeout`` bounds every collective (30 minutes by default).
    """
    if _World.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None and init_method is not None:
        raise ValueError("Cannot specify both init_method and store.")
    if store is not None:
        if world_size <= 0:
            raise ValueError("world_size must be positive if using store")
        if rank < 0:
            raise ValueError("rank must be non-negative if using store")
    secs = _seconds(timeout)
    backends = _parse_backend(backend)
    if "mpi" in backends.values() and not _mpi.is_available():
        _mpi.mpi()  # raises the install hint
    if store is not None:
        given = store

        def get_store() -> Store:
            return given
    else:
        rank, world_size, make = _rendezvous(init_method or "env://", rank, world_size, secs)
        cache: list[Store] = []

        def get_store() -> Store:
            if not cache:
                cache.append(make())
            return cache[0]

    comm = None
    if "mpi" in backends.values():
        comm = _form_world(rank, world_size, get_store, secs)
    elif _mpi.is_available():
        # NCCL alone: MPI (when it loads) carries NCCL's unique id; else the store does
        try:
            _mpi.mpi()
        except RuntimeError:
            pass
        else:
            comm = _form_world(rank, world_size, get_store, secs)
    _World.debug = os.environ.get("TORCH_DISTRIBUTED_DEBUG", "").upper() == "DETAIL"
    pg = ProcessGroup(
        range(world_size), rank, comm, secs, backends, group_name or "default_pg", None
    )
    pg._store_factory = get_store
    _World.default = pg
    _World.groups = [pg]
    _World.count = 1
    GroupMember.WORLD = pg
    _types.group.WORLD = pg
    if comm is not None:
        _install_excepthook(comm)
    if device_id is not None:
        dev: Any = ec.device(device_id) if not isinstance(device_id, ec.device) else device_id
        if dev.type == "cuda":
            pg.backend_for(ec.empty(0, device=dev), "init_process_group(device_id=...)")


def destroy_process_group(group: Group = None) -> None:
    """Release a group (the default one: every group, and the process leaves the world)."""
    if _World.default is None:
        raise AssertionError("Process group cannot be None")
    if group is None or group is _World.default:
        for g in reversed(_World.groups):
            g._shutdown()
        _World.default = None
        _World.groups = []
        GroupMember.WORLD = None
        _types.group.WORLD = None
        if _World.excepthook is not None:
            sys.excepthook = _World.excepthook
            _World.excepthook = None
        return
    if group == GroupMember.NON_GROUP_MEMBER:
        return
    if group not in _World.groups:
        raise ValueError(f"Invalid process group specified: {group!r}")
    group._shutdown()
    _World.groups.remove(group)


def is_initialized() -> bool:
    """Whether the default process group exists."""
    return _World.default is not None


def _default() -> ProcessGroup:
    if _World.default is None:
        raise ValueError(NOT_INITIALIZED)
    return _World.default


def _group(group: Group) -> ProcessGroup | int:
    """The group an argument names: a ProcessGroup, or NON_GROUP_MEMBER."""
    if group is None:
        g = _World.default
        if g is not None:  # the common case first: collectives run it every call
            return g
        raise ValueError(NOT_INITIALIZED)
    if isinstance(group, ProcessGroup) or group == GroupMember.NON_GROUP_MEMBER:
        return group
    raise TypeError(f"group must be a ProcessGroup made by new_group, got {group!r}")


def _member_group(group: Group) -> ProcessGroup:
    """The group, which this process must be a member of (PyTorch's error otherwise)."""
    g = _group(group)
    if not isinstance(g, ProcessGroup):
        raise ValueError("Invalid process group specified")
    return g


def get_rank(group: Group = None) -> int:
    """This process's rank in ``group`` (-1 if it is not a member)."""
    g = _group(group)
    if not isinstance(g, ProcessGroup):  # NON_GROUP_MEMBER
        return -1
    return g._rank


def get_world_size(group: Group = None) -> int:
    """The number of processes in ``group`` (-1 if this process is not a member)."""
    g = _group(group)
    if not isinstance(g, ProcessGroup):  # NON_GROUP_MEMBER
        return -1
    return g._size


def get_backend(group: Group = None) -> str:
    """The group's backend name ('mpi', 'nccl', or 'cpu:mpi,cuda:nccl')."""
    g = _member_group(group)
    return Backend(g._backend_name())


def get_process_group_ranks(group: Group) -> list[int]:
    """The global ranks of the group's members, in group-rank order."""
    g = _member_group(group)
    return list(g._ranks)


def get_global_rank(group: Group, group_rank: int) -> int:
    """The global rank of the group's rank ``group_rank``."""
    g = _member_group(group)
    if not 0 <= group_rank < g._size:
        raise ValueError(f"Group rank {group_rank} is not part of group {g!r}")
    return g._ranks[group_rank]


def get_group_rank(group: Group, global_rank: int) -> int:
    """The group rank of the process of global rank ``global_rank``."""
    g = _member_group(group)
    try:
        return g._ranks.index(global_rank)
    except ValueError:
        raise ValueError(f"Global rank {global_rank} is not part of group {g!r}") from None


def new_group(
    ranks: Sequence[int] | None = None,
    timeout: timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    use_local_synchronization: bool = False,
    group_desc: str | None = None,
    device_id: Any = None,
    sort_ranks: bool = True,
) -> ProcessGroup | int:
    """A group of some of the world's processes.  Every process calls it (unless
    ``use_local_synchronization``: then only the members); the others get
    ``GroupMember.NON_GROUP_MEMBER``."""
    world = _default()
    n = world._size
    if ranks is None:
        ranks = list(range(n))
    members = [int(r) for r in ranks]
    if sort_ranks:
        members = sorted(members)
    ranks = members
    if len(set(ranks)) != len(ranks):
        raise ValueError("ranks should be unique")
    for r in ranks:
        if not 0 <= r < n:
            raise ValueError(
                "The new group's rank should be within the world_size set by init_process_group"
            )
    me = world._rank
    member = me in ranks
    if use_local_synchronization and not member:
        return GroupMember.NON_GROUP_MEMBER
    backends = world._backends if backend is None else _parse_backend(backend)
    secs = world._timeout if timeout is None else _seconds(timeout)
    _World.count += 1
    name = group_desc or f"group_{_World.count - 1}"
    comm = None
    if world._comm is not None:
        MPI = _mpi.mpi()
        if use_local_synchronization:
            grp = world._comm.Get_group().Incl(ranks)
            comm = world._comm.Create_group(grp, tag=_World.count)
            grp.Free()
        else:
            key = ranks.index(me) if member else 0
            comm = world._comm.Split(0 if member else MPI.UNDEFINED, key)
    if not member:
        return GroupMember.NON_GROUP_MEMBER
    g = ProcessGroup(ranks, ranks.index(me), comm, secs, backends, name, None)
    g._store_factory = world._store_factory
    _World.groups.append(g)
    return g


# ------------------------------------------------------------------ argument checks


def _check_tensor(t: object, name: str) -> None:
    if not isinstance(t, ec.Tensor):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
            f"             but got {type(t)} instead."
        )


def _check_list(ts: object, name: str) -> None:
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, ec.Tensor) for t in ts):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]\n"
            f"             but got {type(ts)} instead."
        )


def _skip(g: ProcessGroup | int, what: str) -> TypeIs[int]:
    """Whether this process is outside the group (PyTorch warns and does nothing)."""
    if type(g) is not ProcessGroup and g == GroupMember.NON_GROUP_MEMBER:
        warnings.warn(
            f"Running {what} on global rank {_default()._rank} which does not belong to the "
            "given group.",
            UserWarning,
            stacklevel=3,
        )
        return True
    return False


def _root(
    g: ProcessGroup, what: str, src: int | None, group_src: int | None, name: str = "src"
) -> int:
    """The group rank of a collective's root, from a global rank or a group rank."""
    if group_src is not None:
        if src is not None:
            raise ValueError(f"Can not specify both {name} and group_{name}")
        r = group_src
    else:
        if src is None:
            src = 0
        if g is _World.default:
            r = src
        else:
            if src not in g._ranks:
                raise ValueError(f"Global rank {src} is not part of group {g!r}")
            r = g._ranks.index(src)
    if not 0 <= r < g._size:
        raise RuntimeError(f"{what}: invalid root rank: {r} (the group has ranks 0..{g._size - 1})")
    return r


def _same(ts: Sequence[Tensor], ref: Tensor, what: str) -> None:
    for i, t in enumerate(ts):
        if tuple(t.shape) != tuple(ref.shape):
            raise RuntimeError(
                f"{what}: invalid tensor size at index {i} (expected {tuple(ref.shape)}, "
                f"got {tuple(t.shape)})"
            )
        if t.dtype is not ref.dtype:
            raise RuntimeError(
                f"{what}: invalid tensor type at index {i} (expected {ref.dtype}, got {t.dtype})"
            )
        if t.device != ref.device:
            raise RuntimeError(
                f"{what}: tensors must all be on one device (index {i} is on {t.device}, "
                f"the input on {ref.device})"
            )


def _length(ts: Sequence[Any], n: int, what: str, name: str = "output tensor list") -> None:
    if len(ts) != n:
        raise RuntimeError(
            f"{what}: invalid {name} at index 0 (expected length {n}, got {len(ts)})"
        )


def _fingerprint(
    g: ProcessGroup, backend: Any, what: str, *tensors: Tensor, extra: tuple[Any, ...] = ()
) -> None:
    """TORCH_DISTRIBUTED_DEBUG=DETAIL: every rank's collective, shapes and dtypes
    must agree; a mismatch is reported by name instead of a hang or garbage."""
    if not _World.debug or backend.name != "mpi":
        return
    # extras are made strings here, not by the caller: off the hot path when not debugging
    mine = (what, [(tuple(t.shape), t.dtype.name) for t in tensors], [str(e) for e in extra])
    every = backend.comm.allgather(mine)
    for r, other in enumerate(every):
        if other != mine:
            raise RuntimeError(
                f"Detected mismatch between collectives on ranks. Rank {g._rank} is running "
                f"collective: {mine}, but Rank {r} is running collective: {other}."
            )


def _flat(ts: Sequence[Tensor], like: Tensor) -> Tensor:
    """One contiguous tensor holding the tensors ``ts`` one after another."""
    if not ts:
        return ec.empty(0, dtype=like.dtype, device=like.device)
    with ember_autograd.no_grad():
        return ec.cat([t.reshape(-1) for t in ts])


def _unflat(flat: Tensor, ts: Sequence[Tensor]) -> None:
    """Copy the blocks of ``flat`` into the tensors ``ts`` (the inverse of _flat)."""
    with ember_autograd.no_grad():
        pos = 0
        for t in ts:
            n = t.numel()
            t.copy_(flat[pos : pos + n].view(t.shape))
            pos += n


# ------------------------------------------------------------------ collectives


def all_reduce(
    tensor: Tensor, op: RedOp = ReduceOp.SUM, group: Group = None, async_op: bool = False
) -> Work | None:
    """Reduce ``tensor`` over the group, in place, on every process.

    >>> t = ember.ones(3) * (dist.get_rank() + 1)
    >>> dist.all_reduce(t)              # with 2 processes: t is [3., 3., 3.] on both
    """
    # The checks are the other collectives', with the common case tested inline: a
    # small all-reduce costs about as much as these lines (Note [MPI fast path]).
    if not isinstance(tensor, ec.Tensor):
        _check_tensor(tensor, "tensor")
    g = _group(group)
    if type(g) is not ProcessGroup and _skip(g, "all_reduce"):
        return None
    b = g.backend_for(tensor, "all_reduce")
    if op is not ReduceOp.SUM:  # SUM takes every dtype
        _mpi.check_op(op, tensor.dtype, "all_reduce")
    if _World.debug:
        _fingerprint(g, b, "all_reduce", tensor, extra=(op,))
    return b.allreduce(tensor, op, async_op)


def broadcast(
    tensor: Tensor,
    src: int | None = None,
    group: Group = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Copy ``tensor`` from ``src`` into ``tensor`` on every process."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if _skip(g, "broadcast"):
        return None
    b = g.backend_for(tensor, "broadcast")
    root = _root(g, "broadcast", src, group_src)
    _fingerprint(g, b, "broadcast", tensor, extra=(root,))
    return b.broadcast(tensor, root, async_op)


def reduce(
    tensor: Tensor,
    dst: int | None = None,
    op: RedOp = ReduceOp.SUM,
    group: Group = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Reduce ``tensor`` over the group into ``tensor`` on ``dst``."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if _skip(g, "reduce"):
        return None
    b = g.backend_for(tensor, "reduce")
    root = _root(g, "reduce", dst, group_dst, "dst")
    _mpi.check_op(op, tensor.dtype, "reduce")
    _fingerprint(g, b, "reduce", tensor, extra=(root, op))
    return b.reduce(tensor, root, op, async_op)


def all_gather(
    tensor_list: list[Tensor], tensor: Tensor, group: Group = None, async_op: bool = False
) -> Work | None:
    """Every process's ``tensor`` into ``tensor_list`` (one per rank), on every process."""
    _check_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if _skip(g, "all_gather"):
        return None
    b = g.backend_for(tensor, "all_gather")
    _length(tensor_list, g._size, "all_gather")
    _same(tensor_list, tensor, "all_gather")
    _fingerprint(g, b, "all_gather", tensor)
    flat = ec.empty(g._size * tensor.numel(), dtype=tensor.dtype, device=tensor.device)
    return b.allgather_flat(
        flat, tensor, async_op, "all_gather", after=lambda: _unflat(flat, tensor_list)
    )


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: Group = None, async_op: bool = False
) -> Work | None:
    """Every process's ``input_tensor``, concatenated (or stacked) into
    ``output_tensor`` of size ``world_size * input_tensor.numel()``."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    g = _group(group)
    if _skip(g, "all_gather_into_tensor"):
        return None
    b = g.backend_for(input_tensor, "all_gather_into_tensor")
    if output_tensor.dtype is not input_tensor.dtype:
        raise RuntimeError(
            f"all_gather_into_tensor: output dtype {output_tensor.dtype} differs from input "
            f"dtype {input_tensor.dtype}"
        )
    if output_tensor.numel() != g._size * input_tensor.numel():
        raise RuntimeError(
            f"all_gather_into_tensor: output tensor size must be equal to world_size times input "
            f"tensor size (output {tuple(output_tensor.shape)}, input "
            f"{tuple(input_tensor.shape)}, world size {g._size})"
        )
    _fingerprint(g, b, "all_gather_into_tensor", input_tensor)
    if output_tensor.is_contiguous():
        return b.allgather_flat(output_tensor, input_tensor, async_op, "all_gather_into_tensor")
    flat = output_tensor.contiguous()
    return b.allgather_flat(
        flat,
        input_tensor,
        async_op,
        "all_gather_into_tensor",
        after=lambda: _unflat(flat, [output_tensor]),
    )


def gather(
    tensor: Tensor,
    gather_list: list[Tensor] | None = None,
    dst: int | None = None,
    group: Group = None,
    async_op: bool = False,
    group_dst: int | None = None,
) -> Work | None:
    """Every process's ``tensor`` into ``gather_list`` on ``dst``."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if _skip(g, "gather"):
        return None
    b = g.backend_for(tensor, "gather")
    root = _root(g, "gather", dst, group_dst, "dst")
    if g._rank == root:
        if gather_list is None:
            gather_list = []
        _check_list(gather_list, "gather_list")
        if len(gather_list) != g._size:
            raise RuntimeError(
                f"gather: Incorrect output list size {len(gather_list)}. Output list size should "
                f"be {g._size}, same as size of the process group."
            )
        _same(gather_list, tensor, "gather")
        flat = ec.empty(g._size * tensor.numel(), dtype=tensor.dtype, device=tensor.device)
        after = lambda: _unflat(flat, gather_list)  # noqa: E731
    else:
        if gather_list:
            raise ValueError(
                "Argument ``gather_list`` must NOT be specified on non-destination ranks."
            )
        flat, after = ec.empty(0, dtype=tensor.dtype), None
    _fingerprint(g, b, "gather", tensor, extra=(root,))
    return b.gather_flat(flat, tensor, root, async_op, after)


def scatter(
    tensor: Tensor,
    scatter_list: list[Tensor] | None = None,
    src: int | None = None,
    group: Group = None,
    async_op: bool = False,
    group_src: int | None = None,
) -> Work | None:
    """Block ``rank`` of ``scatter_list`` on ``src`` into ``tensor`` on each process."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if _skip(g, "scatter"):
        return None
    b = g.backend_for(tensor, "scatter")
    root = _root(g, "scatter", src, group_src)
    if g._rank == root:
        if scatter_list is None:
            scatter_list = []
        _check_list(scatter_list, "scatter_list")
        if len(scatter_list) != g._size:
            raise ValueError(
                f"scatter: Incorrect input list size {len(scatter_list)}. Input list size should "
                f"be {g._size}, same as size of the process group."
            )
        _same(scatter_list, tensor, "scatter")
        flat = _flat(scatter_list, tensor)
    else:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
        flat = ec.empty(0, dtype=tensor.dtype)
    _fingerprint(g, b, "scatter", tensor, extra=(root,))
    return b.scatter_flat(tensor, flat, root, async_op)


def reduce_scatter(
    output: Tensor,
    input_list: list[Tensor],
    op: RedOp = ReduceOp.SUM,
    group: Group = None,
    async_op: bool = False,
) -> Work | None:
    """Reduce the lists over the group; block ``rank`` of the result into ``output``."""
    _check_tensor(output, "output")
    _check_list(input_list, "input_list")
    g = _group(group)
    if _skip(g, "reduce_scatter"):
        return None
    b = g.backend_for(output, "reduce_scatter")
    _length(input_list, g._size, "reduce_scatter", "input tensor list")
    _same(input_list, output, "reduce_scatter")
    _mpi.check_op(op, output.dtype, "reduce_scatter")
    _fingerprint(g, b, "reduce_scatter", output, extra=(op,))
    return b.reduce_scatter_flat(output, _flat(input_list, output), op, async_op, "reduce_scatter")


def reduce_scatter_tensor(
    output: Tensor,
    input: Tensor,  # noqa: A002
    op: RedOp = ReduceOp.SUM,
    group: Group = None,
    async_op: bool = False,
) -> Work | None:
    """Reduce ``input`` (world_size blocks along dim 0) over the group; block
    ``rank`` of the result into ``output``."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    g = _group(group)
    if _skip(g, "reduce_scatter_tensor"):
        return None
    b = g.backend_for(output, "reduce_scatter_tensor")
    if input.numel() != output.numel() * g._size:
        raise RuntimeError(
            f"reduce_scatter_tensor: input tensor must be the same size as output size times "
            f"world size (input {tuple(input.shape)}, output {tuple(output.shape)}, world size "
            f"{g._size})"
        )
    if input.dtype is not output.dtype:
        raise RuntimeError(
            f"reduce_scatter_tensor: input dtype {input.dtype} differs from output dtype "
            f"{output.dtype}"
        )
    _mpi.check_op(op, output.dtype, "reduce_scatter_tensor")
    _fingerprint(g, b, "reduce_scatter_tensor", output, extra=(op,))
    return b.reduce_scatter_flat(output, input.contiguous(), op, async_op, "reduce_scatter_tensor")


def all_to_all_single(
    output: Tensor,
    input: Tensor,  # noqa: A002
    output_split_sizes: Sequence[int] | None = None,
    input_split_sizes: Sequence[int] | None = None,
    group: Group = None,
    async_op: bool = False,
) -> Work | None:
    """Split ``input`` along dim 0 (evenly, or by ``input_split_sizes``), send
    piece ``i`` to rank ``i``, and concatenate what arrives into ``output``."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    g = _group(group)
    if _skip(g, "all_to_all_single"):
        return None
    b = g.backend_for(input, "all_to_all_single")
    n = g._size
    if input.dtype is not output.dtype:
        raise RuntimeError(
            f"all_to_all_single: input dtype {input.dtype} differs from output dtype {output.dtype}"
        )

    def counts(t: Tensor, splits: Sequence[int] | None, name: str) -> list[int]:
        row = t.numel() // t.shape[0] if t.dim() and t.shape[0] else (1 if not t.dim() else 0)
        if splits is None or len(splits) == 0:
            if t.dim() == 0 or t.shape[0] % n:
                raise RuntimeError(
                    f"all_to_all_single: the {name}'s dim 0 ({tuple(t.shape)}) must divide by "
                    f"the world size {n} when no split sizes are given"
                )
            return [t.numel() // n] * n
        splits = [int(s) for s in splits]
        if len(splits) != n or sum(splits) != t.shape[0]:
            raise RuntimeError(
                f"all_to_all_single: {name} split sizes {splits} must be {n} numbers summing to "
                f"its dim 0 ({t.shape[0]})"
            )
        return [s * row for s in splits]

    in_counts = counts(input, input_split_sizes, "input")
    out_counts = counts(output, output_split_sizes, "output")
    _fingerprint(g, b, "all_to_all_single", extra=(n,))
    return b.alltoallv_flat(output, out_counts, input, in_counts, async_op, "all_to_all_single")


def all_to_all(
    output_tensor_list: list[Tensor],
    input_tensor_list: list[Tensor],
    group: Group = None,
    async_op: bool = False,
) -> Work | None:
    """Send ``input_tensor_list[i]`` to rank ``i``; receive into ``output_tensor_list``."""
    _check_list(output_tensor_list, "output_tensor_list")
    _check_list(input_tensor_list, "input_tensor_list")
    g = _group(group)
    if _skip(g, "all_to_all"):
        return None
    n = g._size
    _length(output_tensor_list, n, "all_to_all")
    _length(input_tensor_list, n, "all_to_all", "input tensor list")
    ref = input_tensor_list[0]
    b = g.backend_for(ref, "all_to_all")
    for t in (*output_tensor_list, *input_tensor_list):
        if t.dtype is not ref.dtype or t.device != ref.device:
            raise RuntimeError("all_to_all: every tensor must have one dtype and device")
    flat_in = _flat(input_tensor_list, ref)
    out_counts = [t.numel() for t in output_tensor_list]
    flat_out = ec.empty(sum(out_counts), dtype=ref.dtype, device=ref.device)
    _fingerprint(g, b, "all_to_all", extra=(n,))
    return b.alltoallv_flat(
        flat_out,
        out_counts,
        flat_in,
        [t.numel() for t in input_tensor_list],
        async_op,
        "all_to_all",
        after=lambda: _unflat(flat_out, output_tensor_list),
    )


def barrier(
    group: Group = None, async_op: bool = False, device_ids: list[int] | None = None
) -> Work | None:
    """Wait until every process of the group reached the barrier."""
    g = _group(group)
    if _skip(g, "barrier"):
        return None
    if g._mpi is not None:
        return g._mpi.barrier(async_op)
    dev = ec.device("cuda", device_ids[0] if device_ids else 0)
    t = ec.zeros(1, device=dev)
    work = all_reduce(t, group=g, async_op=async_op)
    if not async_op:
        t.cpu()  # waits for the device
    return work


def monitored_barrier(
    group: Group = None, timeout: timedelta | None = None, wait_all_ranks: bool = False
) -> None:
    """A barrier that names the ranks which did not arrive within ``timeout``
    (rank 0 checks in every other rank by point-to-point messages)."""
    g = _group(group)
    if _skip(g, "monitored_barrier"):
        return None
    if g._mpi is None:
        raise ValueError("monitored_barrier is only implemented for the MPI (CPU) backend")
    pg = g._mpi
    limit = g._timeout if timeout is None else _seconds(timeout)
    tag = 0x7E3B
    token = ec.zeros(1, dtype=ec.uint8)
    if g._rank == 0:
        bufs = {r: ec.zeros(1, dtype=ec.uint8) for r in range(1, g._size)}
        reqs = {r: pg.p2p.Irecv(pg.spec(bufs[r]), r, tag) for r in bufs}
        deadline = time.monotonic() + limit
        while reqs:
            for r in [r for r, q in reqs.items() if q.Test()]:
                del reqs[r]
            if reqs and time.monotonic() > deadline:
                missing = sorted(reqs)
                for q in reqs.values():
                    q.Cancel()
                ms = int(limit * 1000)
                if wait_all_ranks:
                    raise RuntimeError(
                        f"Ranks {', '.join(map(str, missing))} failed to pass monitoredBarrier "
                        f"in {ms} ms"
                    )
                raise RuntimeError(f"Rank {missing[0]} failed to pass monitoredBarrier in {ms} ms")
            time.sleep(0.0005)
        for r in range(1, g._size):
            pg.p2p.Isend(pg.spec(token), r, tag + 1).Wait()
        return None
    pg.p2p.Isend(pg.spec(token), 0, tag).Wait()
    req = pg.p2p.Irecv(pg.spec(token), 0, tag + 1)
    deadline = time.monotonic() + limit
    while not req.Test():
        if time.monotonic() > deadline:
            req.Cancel()
            raise RuntimeError(
                f"Rank {g._rank} timed out in monitoredBarrier after {int(limit * 1000)} ms "
                "(rank 0 did not release it)"
            )
        time.sleep(0.0005)
    return None


# ------------------------------------------------------------------ point to point


def _peer(
    g: ProcessGroup, peer: int | None, group_peer: int | None, what: str, name: str
) -> int | None:
    if group_peer is not None:
        r = group_peer
    elif peer is None:
        return None
    elif g is _World.default:
        r = peer
    else:
        if peer not in g._ranks:
            raise ValueError(f"Global rank {peer} is not part of group {g!r}")
        r = g._ranks.index(peer)
    if not 0 <= r < g._size:
        raise ValueError(f"{what}: invalid {name} rank {r} (the group has ranks 0..{g._size - 1})")
    if r == g._rank:
        word = "destination" if name == "destination" else "source"
        raise ValueError(
            f"Invalid {word} rank: {word} rank should not be the same as the rank of the "
            "current process."
        )
    return r


def isend(
    tensor: Tensor,
    dst: int | None = None,
    group: Group = None,
    tag: int = 0,
    group_dst: int | None = None,
) -> Work | None:
    """Send ``tensor`` to ``dst`` asynchronously; returns a Work."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if _skip(g, "isend"):
        return None
    r = _peer(g, dst, group_dst, "isend", "destination")
    if r is None:
        raise ValueError("isend: dst or group_dst must be given")
    return g.backend_for(tensor, "isend").isend(tensor, r, tag)


def irecv(
    tensor: Tensor,
    src: int | None = None,
    group: Group = None,
    tag: int = 0,
    group_src: int | None = None,
) -> Work | None:
    """Receive into ``tensor`` from ``src`` (any rank if None) asynchronously."""
    _check_tensor(tensor, "tensor")
    g = _group(group)
    if _skip(g, "irecv"):
        return None
    r = _peer(g, src, group_src, "irecv", "source")
    return g.backend_for(tensor, "irecv").irecv(tensor, r, tag)


def send(
    tensor: Tensor,
    dst: int | None = None,
    group: Group = None,
    tag: int = 0,
    group_dst: int | None = None,
) -> None:
    """Send ``tensor`` to ``dst`` and wait until it is sent."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(
    tensor: Tensor,
    src: int | None = None,
    group: Group = None,
    tag: int = 0,
    group_src: int | None = None,
) -> int:
    """Receive into ``tensor``; returns the sender's rank (global)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    g = _member_group(group)
    if group_src is not None:
        return g._ranks[group_src]
    if src is None:
        return g._ranks[work.source_rank()]
    return src


class P2POp:
    """One point-to-point operation for batch_isend_irecv."""

    def __init__(
        self,
        op: Callable[..., Work | None],
        tensor: Tensor,
        peer: int | None = None,
        group: Group = None,
        tag: int = 0,
        group_peer: int | None = None,
    ) -> None:
        if op not in (isend, irecv):
            raise ValueError(
                "Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                "``torch.distributed.irecv``."
            )
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work | None]:
    """Start every P2POp; returns their Works."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError(
            "Invalid ``p2p_op_list``. Each op is expected to to be of type "
            "``torch.distributed.P2POp``."
        )
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


# ------------------------------------------------------------------ objects


class _ObjDevice:
    device: ec.device | None = (
        None  # set per call: CPU where the group has a CPU backend, else the GPU
    )


def _to_bytes_tensor(obj: object) -> tuple[Tensor, int]:
    buf = io.BytesIO()
    pickle.Pickler(buf).dump(obj)
    data = buf.getvalue()
    import numpy as np

    t = ec.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())
    return t.to(_ObjDevice.device), len(data)


def _from_bytes(t: Tensor, n: int) -> Any:
    return pickle.loads(t[:n].cpu().numpy().tobytes())


def _object_group(group: Group) -> ProcessGroup | int:
    """The group; object tensors go to CPU if it has a CPU backend, else to the
    current CUDA device (as PyTorch does for NCCL)."""
    g = _group(group)
    if isinstance(g, ProcessGroup):
        if "cpu" in g._backends:
            _ObjDevice.device = ec.device("cpu")
        else:
            _ObjDevice.device = ec.device("cuda", ec.cuda.current_device())
    return g


def _z(*shape: int, dtype: ec.dtype) -> Tensor:
    return ec.zeros(*shape, dtype=dtype, device=_ObjDevice.device)


def _e(*shape: int, dtype: ec.dtype) -> Tensor:
    return ec.empty(*shape, dtype=dtype, device=_ObjDevice.device)


def _t(values: list[int]) -> Tensor:
    return ec.tensor(values, dtype=ec.int64).to(_ObjDevice.device)


def broadcast_object_list(
    object_list: list[Any],
    src: int | None = None,
    group: Group = None,
    device: ec.device | str | None = None,
    group_src: int | None = None,
) -> None:
    """Broadcast picklable objects from ``src`` into ``object_list`` (in place)."""
    g = _object_group(group)
    if _skip(g, "broadcast_object_list"):
        return
    root = _root(g, "broadcast_object_list", src, group_src)
    src_global = g._ranks[root]
    sizes = _z(len(object_list), dtype=ec.int64)
    if g._rank == root:
        parts = [_to_bytes_tensor(o) for o in object_list]
        sizes = _t([n for _, n in parts]) if parts else sizes
    broadcast(sizes, src=src_global, group=g)
    total = sum(sizes.cpu().tolist())
    if g._rank == root:
        data = ec.cat([p for p, _ in parts]) if parts else _e(0, dtype=ec.uint8)
    else:
        data = _e(total, dtype=ec.uint8)
    broadcast(data, src=src_global, group=g)
    if g._rank != root:
        pos = 0
        for i, n in enumerate(sizes.cpu().tolist()):
            object_list[i] = _from_bytes(data[pos : pos + n], n)
            pos += n


def all_gather_object(object_list: list[Any], obj: object, group: Group = None) -> None:
    """Every process's picklable ``obj`` into ``object_list`` (one per rank)."""
    g = _object_group(group)
    if _skip(g, "all_gather_object"):
        return
    t, n = _to_bytes_tensor(obj)
    sizes = _z(g._size, dtype=ec.int64)
    all_gather_into_tensor(sizes, _t([n]), group=g)
    sizes = sizes.cpu().tolist()
    biggest = max(sizes)
    padded = _z(biggest, dtype=ec.uint8)
    padded[:n] = t
    out = _e(biggest * g._size, dtype=ec.uint8)
    all_gather_into_tensor(out, padded, group=g)
    if len(object_list) != g._size:
        raise RuntimeError(
            f"all_gather_object: object_list has {len(object_list)} entries, the group "
            f"{g._size} ranks"
        )
    for i, size in enumerate(sizes):
        object_list[i] = _from_bytes(out[i * biggest : i * biggest + size], size)


def gather_object(
    obj: object,
    object_gather_list: list[Any] | None = None,
    dst: int | None = None,
    group: Group = None,
    group_dst: int | None = None,
) -> None:
    """Every process's picklable ``obj`` into ``object_gather_list`` on ``dst``."""
    g = _object_group(group)
    if _skip(g, "gather_object"):
        return
    root = _root(g, "gather_object", dst, group_dst, "dst")
    if g._rank == root:
        if object_gather_list is None or len(object_gather_list) != g._size:
            raise ValueError(
                f"gather_object: object_gather_list on the destination must have {g._size} entries"
            )
    elif object_gather_list is not None:
        raise ValueError(
            "Argument ``object_gather_list`` must NOT be specified on non-destination ranks."
        )
    t, n = _to_bytes_tensor(obj)
    sizes = _z(g._size, dtype=ec.int64)
    all_gather_into_tensor(sizes, _t([n]), group=g)
    sizes = sizes.cpu().tolist()
    biggest = max(sizes)
    padded = _z(biggest, dtype=ec.uint8)
    padded[:n] = t
    outs = [_e(biggest, dtype=ec.uint8) for _ in range(g._size)] if g._rank == root else None
    gather(padded, outs, dst=g._ranks[root], group=g)
    if outs is not None and object_gather_list is not None:  # on the destination
        for i, size in enumerate(sizes):
            object_gather_list[i] = _from_bytes(outs[i], size)


def scatter_object_list(
    scatter_object_output_list: list[Any],
    scatter_object_input_list: list[Any] | None = None,
    src: int | None = None,
    group: Group = None,
    group_src: int | None = None,
) -> None:
    """Object ``rank`` of ``scatter_object_input_list`` on ``src`` into
    ``scatter_object_output_list[0]`` on each process."""
    g = _object_group(group)
    if _skip(g, "scatter_object_list"):
        return
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError(
            "Expected argument scatter_object_output_list to be a list of size at least 1."
        )
    root = _root(g, "scatter_object_list", src, group_src)
    src_global = g._ranks[root]
    info = _z(1, dtype=ec.int64)
    if g._rank == root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != g._size:
            raise ValueError(
                f"scatter_object_list: the source needs {g._size} input objects, got "
                f"{None if scatter_object_input_list is None else len(scatter_object_input_list)}"
            )
        parts = [_to_bytes_tensor(o) for o in scatter_object_input_list]
        biggest = max(n for _, n in parts)
        info = _t([biggest])
    broadcast(info, src=src_global, group=g)
    biggest = int(info.item())
    size_out = _z(1, dtype=ec.int64)
    out = _e(biggest, dtype=ec.uint8)
    if g._rank == root:
        padded = []
        for p, n in parts:
            q = _z(biggest, dtype=ec.uint8)
            q[:n] = p
            padded.append(q)
        scatter(out, padded, src=src_global, group=g)
        scatter(size_out, [_t([n]) for _, n in parts], src=src_global, group=g)
    else:
        scatter(out, None, src=src_global, group=g)
        scatter(size_out, None, src=src_global, group=g)
    scatter_object_output_list[0] = _from_bytes(out, int(size_out.item()))


__all__ += ["P2POp", "batch_isend_irecv", "Work", "CompletedWork"]
