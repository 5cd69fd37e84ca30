"""Shared-memory segments for batches going from DataLoader workers to the main
process.

Note [Shared-memory segments]
A segment is an unnamed file in /dev/shm (created with O_TMPFILE, or created and
unlinked at once), mapped by both processes; it travels as a file descriptor
over a Unix socket (see transport.py), so no name is ever left behind: the
memory is returned when the last process unmaps it, whatever happens to the
processes.  Its pages are reserved up front with posix_fallocate, so a full
/dev/shm shows up as ENOSPC when the segment is made, which we turn into an
error naming /dev/shm and its free space -- instead of the SIGBUS a sparse
file in a full tmpfs delivers on first touch.  (EMBER_DATA_SHM_DIR names
another directory, e.g. for tests or systems without /dev/shm.)

Inside a worker, default_collate asks for its stacked arrays here (``empty``);
the arrays are registered by address, so the transport sends their segment
instead of copying the bytes.
"""

import errno
import itertools
import mmap
import os
import tempfile
from typing import Any

import numpy as np

# Arrays smaller than this travel inside the message instead.
MIN_SEGMENT_BYTES = 32 * 1024
ALIGN = 64

_MAP_FLAGS = mmap.MAP_SHARED  # pages fault in lazily (with fault-around) when read
_counter = itertools.count()


def shm_dir():
    """The directory segments are made in (/dev/shm unless overridden)."""
    d = os.environ.get("EMBER_DATA_SHM_DIR")
    if d:
        return d
    return "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()


def _human(n):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"


def exhausted_error(nbytes, directory):
    """The error for a segment of ``nbytes`` that does not fit in ``directory``."""
    try:
        st = os.statvfs(directory)
        free, total = st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
        room = f"{_human(free)} free of {_human(total)}"
    except OSError:
        room = "free space unknown"
    return RuntimeError(
        f"DataLoader: out of shared memory: {_human(nbytes)} ({nbytes} bytes) for a batch do not "
        f"fit in {directory} ({room}). Make {directory} larger (for a container: "
        "docker run --shm-size=...), or lower batch_size, prefetch_factor or num_workers, "
        "or use num_workers=0."
    )


def _open_unnamed(directory):
    try:
        return os.open(directory, os.O_TMPFILE | os.O_RDWR, 0o600)
    except (AttributeError, OSError):
        pass  # no O_TMPFILE here: a named file, unlinked at once
    for _ in range(100):
        name = os.path.join(
            directory, f"ember_data_{os.getpid()}_{next(_counter)}_{os.urandom(4).hex()}"
        )
        try:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        os.unlink(name)
        return fd
    raise RuntimeError(f"DataLoader: could not create a shared-memory file in {directory}")


def create(nbytes):
    """A new segment of ``nbytes`` (> 0): its file descriptor, pages reserved."""
    directory = shm_dir()
    fd = _open_unnamed(directory)
    try:
        os.posix_fallocate(fd, 0, nbytes)
    except OSError as e:
        if e.errno in (errno.EOPNOTSUPP, errno.EINVAL):
            os.ftruncate(fd, nbytes)  # a filesystem without fallocate
        else:
            os.close(fd)
            if e.errno in (errno.ENOSPC, errno.ENOMEM, errno.EDQUOT, errno.EFBIG):
                raise exhausted_error(nbytes, directory) from None
            raise
    return fd


def map_fd(fd, nbytes):
    """Map a segment read-write (shared); the mapping outlives the descriptor."""
    return mmap.mmap(fd, nbytes, flags=_MAP_FLAGS, prot=mmap.PROT_READ | mmap.PROT_WRITE)


class Segment:
    """A segment made by this process and not yet sent: descriptor + mapping."""

    __slots__ = ("fd", "nbytes", "mapping", "address")

    def __init__(self, nbytes):
        self.fd = create(nbytes)
        self.nbytes = nbytes
        try:
            self.mapping = map_fd(self.fd, nbytes)
        except BaseException:
            os.close(self.fd)
            raise
        self.address = np.frombuffer(self.mapping, np.uint8, 1).ctypes.data

    def close(self):
        """Forget the descriptor (the mapping lives while arrays use it)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# Segments made for arrays of the batch being built in this process, by address,
# until the transport sends (or drops) them.
_registry: dict[Any, Any] = {}


def empty(shape, dtype):
    """An uninitialised array in a new segment (registered for the transport),
    or None when it is too small to be worth a segment."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes < MIN_SEGMENT_BYTES or dtype.hasobject:
        return None
    seg = Segment(nbytes)
    _registry[seg.address] = seg
    return np.frombuffer(seg.mapping, dtype, nbytes // dtype.itemsize).reshape(shape)


def find(address, nbytes):
    """(segment, offset) of a registered segment holding [address, address+nbytes)."""
    for base, seg in _registry.items():
        if base <= address and address + nbytes <= base + seg.nbytes:
            return seg, address - base
    return None, 0


def release_registered():
    """Close the descriptors of every registered segment (after a send)."""
    for seg in _registry.values():
        seg.close()
    _registry.clear()
