"""The one module that touches the C helper (ember_distributed._C): MPI calls
made from C on the library mpi4py loaded (Note [MPI fast path] in _mpi.py), with
C statuses turned into Python results here."""

from __future__ import annotations

from typing import Any

try:
    from ember_distributed._C import ffi, lib
except ImportError:  # built without a C compiler: everything runs through mpi4py
    ffi = lib = None

# emd_allreduce's statuses; a positive one is MPI's error code
OK, TIMEOUT = (lib.EMD_OK, lib.EMD_TIMEOUT) if lib is not None else (0, -1)

_bound: bool | None = None  # None: not tried yet
INT_MAX = 2**31 - 1  # MPI's count is a C int


def bind(MPI: Any) -> bool:
    """Whether the fast path can run: the C helper is built, the loaded MPI library
    exports what it calls, every handle type has one width, and the library found
    is the one mpi4py runs (the same MPI_Get_library_version)."""
    global _bound
    if _bound is None:
        _bound = False
        if lib is not None:
            widths = {MPI._sizeof(k) for k in (MPI.Comm, MPI.Datatype, MPI.Op, MPI.Request)}
            if len(widths) == 1:
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


# (ptr, count, datatype, op, comm, in_place, timeout) -> OK, TIMEOUT or MPI's error
# code: an in-place MPI_Iallreduce polled to completion in C without the GIL.  The
# C function itself, not a wrapper: its Python cost is what it exists to avoid.
allreduce: Any = lib.emd_allreduce if lib is not None else None
