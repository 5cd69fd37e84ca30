"""The one module that touches the C helper (ember_multiprocessing._C): atomic
counters in shared memory and raw mappings, with C failures turned into
Python exceptions here."""

import os

from ember_multiprocessing._C import lib

ref_add = lib.emp_ref_add  # (address, delta) -> new value
ref_store = lib.emp_ref_store  # (address, value)
ref_load = lib.emp_ref_load  # (address) -> value


def map_fd(fd, size, what):
    """Map ``size`` bytes of descriptor ``fd`` shared and writable; the address."""
    addr = lib.emp_map(fd, size)
    if not addr:
        err = lib.emp_last_errno()
        raise OSError(
            err, f"ember_multiprocessing: cannot map {what} ({size} bytes): {os.strerror(err)}"
        )
    return addr


def unmap(addr, size):
    """Unmap; failures are ignored (this runs from finalisers)."""
    lib.emp_unmap(addr, size)
