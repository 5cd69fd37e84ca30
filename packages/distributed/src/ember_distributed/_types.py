"""The small types of torch.distributed: errors, ReduceOp, Backend, GroupMember."""

from __future__ import annotations

import enum
from datetime import timedelta
from typing import Any

__all__ = [
    "Backend",
    "DistBackendError",
    "DistError",
    "DistNetworkError",
    "DistStoreError",
    "QueueEmptyError",
    "GroupMember",
    "ReduceOp",
    "default_pg_timeout",
]

# PyTorch's text, so scripts that match on it (and readers who search it) find it.
NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)

default_pg_timeout = timedelta(minutes=30)


class DistError(RuntimeError):
    """An error in the distributed library."""


class DistBackendError(DistError):
    """An error in a collective backend (MPI, NCCL), a timeout included."""


class DistNetworkError(DistError):
    """A network error between processes."""


class DistStoreError(DistError):
    """An error in the key-value store processes rendezvous through."""


class QueueEmptyError(DistStoreError):
    """A store queue had nothing to pop."""


class Backend(str):
    """A backend name (``Backend("MPI") == "mpi"``), as in PyTorch.  ember runs
    ``mpi`` (CPU tensors, through mpi4py) and ``nccl`` (CUDA tensors); ``gloo``
    is accepted as a name and runs on MPI (see init_process_group)."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"

    def __new__(cls, name: str) -> Backend:
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

        def __repr__(self) -> str:
            return f"<RedOpType.{self.name}: {self.value}>"

        def __str__(self) -> str:
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


class GroupMember:
    """``GroupMember.WORLD`` is the default group once initialised (None before);
    ``NON_GROUP_MEMBER`` is what ``new_group`` returns on ranks outside it."""

    WORLD: Any = None  # a ProcessGroup once initialised
    NON_GROUP_MEMBER = -100


class group:  # noqa: N801 - PyTorch's name
    """``group.WORLD``: the default process group once initialised (None before)."""

    WORLD: Any = None
