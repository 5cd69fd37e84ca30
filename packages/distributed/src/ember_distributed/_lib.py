"""The one module that touches the C helper (ember_distributed._C): MPI calls
made from C on the library mpi4py loaded (Note [MPI fast path] in _mpi.py), with
C statuses turned into Python results here."""

from __future__ import annotations

from typing import Any

try:
    from ember_distributed._C import ffi, lib
except ImportError:  # built without a C compiler: everything runs through mpi4py
    ffi = lib = None

# the statuses of emd_allreduce and emd_wait; a positive one is MPI's error code
OK, PENDING = (lib.EMD_OK, lib.EMD_PENDING) if lib is not None else (0, -1)
SLICE = 0.1  # seconds the C loop polls before returning to Python (signals)

_bound: bool | None = None  # None: not tried yet
INT_MAX = 2**31 - 1  # MPI's count is a C int


def bind(MPI: Any) -> bool:
    """Whether the fast path can run: the C helper is built, the loaded MPI library
    exports what it calls, every handle type has one width, and the library found
    is the one mpi4py runs (the same MPI_Get_library_version)."""
    global _bound
    if _bound is None:
        _bound = False
        try:  # mpi4py's handle helpers (an older mpi4py may lack them)
            widths = {MPI._sizeof(k) for k in (MPI.Comm, MPI.Datatype, MPI.Op, MPI.Request)}
            MPI._handleof(MPI.COMM_WORLD)
        except (AttributeError, TypeError):
            widths = set()
        if lib is not None and len(widths) == 1:
            buf = ffi.new("char[]", 8192)
            if lib.emd_mpi_bind(widths.pop(), buf, 8192) == 0:
                found = ffi.string(buf).decode(errors="replace").strip()
                # (mpi4py keeps the NUL that Open MPI counts in the length)
                _bound = found == MPI.Get_library_version().strip("\x00 \n")
    return _bound


def handle(MPI: Any, obj: Any) -> int:
    """An MPI handle as the unsigned 64-bit integer the C side takes (mpi4py gives
    MPICH's int handles sign-extended)."""
    return int(MPI._handleof(obj)) & 0xFFFFFFFFFFFFFFFF


def in_place(MPI: Any) -> int:
    """MPI_IN_PLACE's address (-1 in MPICH, 1 in Open MPI)."""
    return int(MPI.IN_PLACE)


def new_request() -> Any:
    """A request handle slot (uint64_t *) for allreduce and wait."""
    return ffi.new("uint64_t *")


# (ptr, count, datatype, op, comm, in_place, slice, request slot) -> OK, PENDING or
# MPI's error code: an in-place MPI_Iallreduce polled in C without the GIL for up to
# `slice` seconds.  The C function itself, not a wrapper: its Python cost is what it
# exists to avoid.
allreduce: Any = lib.emd_allreduce if lib is not None else None
# (request slot, slice) -> OK, PENDING or MPI's error code: polls on
wait: Any = lib.emd_wait if lib is not None else None
